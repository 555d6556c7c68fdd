// Hang reports: what each rank is doing. Ranks on this host publish it in
// their shared-memory segment on every call (two stores, no system call);
// ranks on other hosts are asked through the rendezvous server, to which a
// rank reports only when one of its waits got slow (and again when that call
// ends), so a fast collective never pays for a message.
#include <algorithm>
#include <string_view>
#include <thread>
#include <utility>

#include "comm/comm.h"
#include "comm/operation.h"

namespace loom {
namespace {

constexpr int kMaxListed = 16;
// How long the timed-out rank waits for the rendezvous's answer before it
// reports without the remote states.
constexpr std::chrono::seconds kQueryLimit{1};
// A peer that failed a call this long ago is not failing alongside this rank:
// this rank was away (stopped, or slow to arrive) and should stop waiting.
constexpr int64_t kGaveUpLongAgoNs = 1'000'000'000;

/// What a failed call is known by: its sequence and collective, never 0.
uint64_t failedCallWord(const PeerStatus& call) {
  return (call.sequence + 1) << 8 | (call.collective & 0xff);
}

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long a failed call waits for the rendezvous to name a rank that died:
// the death reaches it about when the closed link reaches this rank.
constexpr std::chrono::milliseconds kFirstCauseGrace{100};

std::string collectiveName(uint32_t code) {
  if (code > static_cast<uint32_t>(Collective::Recv)) return fmt::format("collective {}", code);
  return toString(static_cast<Collective>(code));
}

std::string describeLocal(const RankStatus& s, int rank) {
  const uint64_t sequence = s.sequence.load(std::memory_order_relaxed);
  if (s.busy.load(std::memory_order_acquire) != 0) {
    return fmt::format(" rank {} in {} #{} ({} elements);", rank,
                       collectiveName(s.collective.load()), sequence, s.count.load());
  }
  return fmt::format(" rank {} not in a call, {} collectives done;", rank, sequence);
}

std::string describeRemote(const PeerReport& report, int rank) {
  const PeerStatus& s = report.status;
  switch (report.state) {
    case PeerReport::State::Busy:
      return fmt::format(" rank {} in {} #{} ({} elements), waiting (reported {} ms ago);", rank,
                         collectiveName(s.collective), s.sequence, s.count, report.ageMillis);
    case PeerReport::State::Idle:
      return fmt::format(
          " rank {} not waiting in any call (last report {} ms ago: {} collectives done);", rank,
          report.ageMillis, s.sequence);
    case PeerReport::State::Failed:
      return fmt::format(" rank {} failed in {} #{} ({} elements) {} ms ago;", rank,
                         collectiveName(s.collective), s.sequence, s.count, report.ageMillis);
    case PeerReport::State::Gone:
      return fmt::format(" rank {} disconnected;", rank);
    case PeerReport::State::Silent:
      break;
  }
  return fmt::format(" rank {} not waiting in any call (no slow wait reported);", rank);
}

}  // namespace

StatusScope::StatusScope(Comm& comm, const Operation& op)
    : comm_(comm), status_(comm.shm ? &comm.shm->ownHeader().status : nullptr) {
  comm.callStatus = PeerStatus{.busy = true,
                               .collective = static_cast<uint32_t>(op.collective),
                               .sequence = comm.collectiveCount,
                               .count = static_cast<uint64_t>(op.count)};
  comm.callStatusReported = false;
  if (status_ == nullptr) return;
  status_->sequence.store(comm.collectiveCount, std::memory_order_relaxed);
  status_->collective.store(static_cast<uint32_t>(op.collective), std::memory_order_relaxed);
  status_->count.store(op.count, std::memory_order_relaxed);
  status_->shape.store(static_cast<uint32_t>(op.type) | static_cast<uint32_t>(op.op) << 8,
                       std::memory_order_relaxed);
  status_->root.store(op.root, std::memory_order_relaxed);
  status_->busy.store(1, std::memory_order_release);
}

std::string describeCallShape(Collective collective, size_t count, DataType type, ReduceOp op,
                              int root) {
  const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
  return fmt::format("{} of {} {} elements{}{}", toString(collective), count, dataTypeName(type),
                     isReduction(collective) ? fmt::format(" ({})", reduceOpName(op)) : "",
                     rooted ? fmt::format(", root {}", root) : "");
}

std::string describeLocalCall(Comm& comm, int r) {
  if (!comm.shm || !comm.shm->isMapped(r)) return "(its call is not visible from this host)";
  const RankStatus& s = comm.shm->headerOf(r).status;
  const bool busy = s.busy.load(std::memory_order_acquire) != 0;
  const uint64_t sequence = s.sequence.load(std::memory_order_relaxed);
  const uint32_t collective = s.collective.load(std::memory_order_relaxed);
  if (collective > static_cast<uint32_t>(Collective::Recv) || (!busy && sequence == 0)) {
    return fmt::format("is in no call ({} collectives done)", sequence);
  }
  const uint32_t shape = s.shape.load(std::memory_order_relaxed);
  const std::string call = describeCallShape(
      static_cast<Collective>(collective), s.count.load(std::memory_order_relaxed),
      static_cast<DataType>(shape & 0xff), static_cast<ReduceOp>((shape >> 8) & 0xff),
      s.root.load(std::memory_order_relaxed));
  // A peer that already failed on the mismatch has left its call; its fields still say which.
  return busy ? fmt::format("is in #{}: {}", sequence, call)
              : fmt::format("was last in {} (it has returned)", call);
}

StatusScope::~StatusScope() {
  const bool mismatched = std::exchange(comm_.callMismatched, false);
  comm_.callStatus.busy = false;
  // A failed call keeps its own sequence number, so a peer's report names it.
  comm_.callStatus.failed = !succeeded_;
  if (!comm_.callStatus.failed) comm_.callStatus.sequence = comm_.collectiveCount;
  if (comm_.callStatusReported && comm_.bootstrap) {
    // The peers were told this rank was waiting; tell them it is not any more.
    comm_.bootstrap->reportStatus(comm_.callStatus);
    comm_.callStatusReported = false;
  }
  if (status_ == nullptr) return;
  if (comm_.callStatus.failed) {
    // 0: "long ago" to every peer, so a mismatch ends their waits at once.
    status_->failedAtNs.store(mismatched ? 0 : steadyNs(), std::memory_order_relaxed);
    status_->failedCall.store(failedCallWord(comm_.callStatus), std::memory_order_release);
  }
  status_->sequence.store(comm_.collectiveCount, std::memory_order_relaxed);
  status_->busy.store(0, std::memory_order_release);
}

void checkLocalPeersGaveUp(Comm& comm) {
  // Send/receive groups do not advance the sequence, so two of them cannot
  // be told apart; and only some ranks take part in them.
  const auto kind = static_cast<Collective>(comm.callStatus.collective);
  if (!comm.shm || !comm.callStatus.busy || kind == Collective::Send || kind == Collective::Recv) {
    return;
  }
  const uint64_t mine = failedCallWord(comm.callStatus);
  for (int r = 0; r < comm.nranks; ++r) {
    if (r == comm.rank || !comm.shm->isMapped(r)) continue;
    const RankStatus& peer = comm.shm->headerOf(r).status;
    // Only an old failure: peers that fail at about the same time as this
    // rank (all timing out together) each report their own error.
    if (peer.failedCall.load(std::memory_order_acquire) != mine) continue;
    const int64_t failedAt = peer.failedAtNs.load(std::memory_order_relaxed);
    if (failedAt == 0) {
      raise(ErrorCode::InvalidUsage,
            "rank {} found ranks in different calls during {} #{} (its error names both) and "
            "gave up on it: every rank must make the same collective calls in the same order",
            r, collectiveName(comm.callStatus.collective), comm.callStatus.sequence);
    }
    if (steadyNs() - failedAt > kGaveUpLongAgoNs) {
      raise(ErrorCode::RemoteError,
            "rank {} already failed {} #{} and gave up on it, so this call cannot complete (its "
            "own error says why)",
            r, collectiveName(comm.callStatus.collective), comm.callStatus.sequence);
    }
  }
}

void raiseFirstCause(Comm& comm, const Error& seen) {
  // A timeout is its own first cause: its report already says what every
  // peer was doing.
  const bool timedOut = dynamic_cast<const WaitTimedOut*>(&seen) != nullptr;
  if (!comm.bootstrap || timedOut) throw seen;
  const Deadline grace = Deadline::after(kFirstCauseGrace);
  for (;;) {
    try {
      comm.bootstrap->checkPeers();
    } catch (const Error& cause) {
      // Revoked, or the mismatch a revoking rank found: the first cause.
      if (const int by = comm.bootstrap->revokedBy(); by >= 0) {
        markRevoked(comm, by);
        throw;
      }
      const std::string_view first = cause.what();
      if (cause.code() != ErrorCode::RemoteError ||
          std::string_view(seen.what()).find(first) != std::string_view::npos) {
        throw seen;  // nothing more to say: the bootstrap's news is this error
      }
      raise(ErrorCode::RemoteError, "{} (on this rank: {})", first, seen.what());
    }
    if (grace.expired()) throw seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void reportSlowWait(Comm& comm) {
  if (comm.allLocal || comm.callStatusReported || !comm.callStatus.busy) return;
  comm.callStatusReported = comm.bootstrap->reportStatus(comm.callStatus);
}

std::string describePeerStates(Comm& comm) {
  std::string out = "peer states:";
  std::vector<PeerReport> remote;
  std::string remoteProblem;
  if (!comm.allLocal) {
    try {
      remote = comm.bootstrap->queryStatuses(Deadline::after(kQueryLimit));
    } catch (const Error& e) {
      remoteProblem = e.what();
    }
  }
  int listed = 0;
  for (int r = 0; r < comm.nranks && listed < kMaxListed; ++r) {
    if (r == comm.rank) continue;
    const bool local = comm.shm && comm.shm->isMapped(r);
    if (local) {
      out += describeLocal(comm.shm->headerOf(r).status, r);
    } else if (static_cast<size_t>(r) < remote.size()) {
      out += describeRemote(remote[static_cast<size_t>(r)], r);
    } else {
      continue;
    }
    ++listed;
  }
  if (listed == kMaxListed) out += " ...";
  if (!remoteProblem.empty()) {
    out += fmt::format(" ranks on other hosts: state not available ({})", remoteProblem);
  }
  return out;
}

}  // namespace loom
