// Hang reports: what each rank on this host is doing, read from the status
// every rank publishes in its shared-memory segment.
#include "comm/comm.h"

namespace loom {

StatusScope::StatusScope(Comm& comm, Collective collective, size_t count)
    : comm_(comm), status_(comm.shm ? &comm.shm->headerOf(comm.rank).status : nullptr) {
  if (status_ == nullptr) return;
  status_->sequence.store(comm.collectiveCount, std::memory_order_relaxed);
  status_->collective.store(static_cast<uint32_t>(collective), std::memory_order_relaxed);
  status_->count.store(count, std::memory_order_relaxed);
  status_->busy.store(1, std::memory_order_release);
}

StatusScope::~StatusScope() {
  if (status_ == nullptr) return;
  status_->sequence.store(comm_.collectiveCount, std::memory_order_relaxed);
  status_->busy.store(0, std::memory_order_release);
}

std::string describePeerStates(Comm& comm) {
  constexpr int kMaxListed = 16;
  std::string out = "peer states:";
  int listed = 0;
  int remote = 0;
  for (int r = 0; r < comm.nranks; ++r) {
    if (!comm.shm || !comm.shm->isMapped(r)) {
      ++remote;
      continue;
    }
    if (listed++ == kMaxListed) {
      out += " ...";
      break;
    }
    const RankStatus& s = comm.shm->headerOf(r).status;
    const uint64_t sequence = s.sequence.load(std::memory_order_relaxed);
    if (s.busy.load(std::memory_order_acquire) != 0) {
      out += fmt::format(" rank {} in {} #{} ({} elements);", r,
                         toString(static_cast<Collective>(s.collective.load())), sequence,
                         s.count.load());
    } else {
      out += fmt::format(" rank {} not in a call, {} collectives done;", r, sequence);
    }
  }
  if (remote > 0) out += fmt::format(" {} rank(s) on other hosts (state not visible)", remote);
  return out;
}

}  // namespace loom
