#include "transports/shm/shm_domain.h"

#include <unistd.h>

#include <new>

#include "core/error.h"
#include "transports/shm/shm_link.h"

namespace loom {

std::string shmSegmentName(uint64_t commTag, int rank) {
  return fmt::format("/loom-{:016x}-{}", commTag, rank);
}

ShmDomain::ShmDomain(uint64_t commTag, int rank, int nranks, const ShmConfig& config)
    : tag_(commTag), rank_(rank), nranks_(nranks), peers_(static_cast<size_t>(nranks)) {
  if (config.slots < 2 || config.slots > kMaxShmSlots) {
    raise(ErrorCode::InvalidArgument, "LOOM_SHM_SLOTS={} must be in [2, {}]", config.slots,
          kMaxShmSlots);
  }
  layout_.slotBytes = SegmentLayout::roundUp(config.slotBytes, 64);
  layout_.slots = config.slots;
  layout_.arenaBytes = SegmentLayout::roundUp(config.arenaBytes, 4096);
  layout_.nranks = nranks;
  own_ = ShmSegment::create(shmSegmentName(commTag, rank), layout_.totalBytes());

  // The header and FIFO counters must be constructed before any peer maps us;
  // the bootstrap barrier after this constructor orders that.
  auto* h = new (own_.data()) SegmentHeader();
  ownHeader_ = h;
  h->magic = kShmMagic;
  h->rank = rank;
  h->nranks = nranks;
  h->slotBytes = layout_.slotBytes;
  h->slots = layout_.slots;
  h->arenaBytes = layout_.arenaBytes;
  h->ownerAddress = reinterpret_cast<uint64_t>(h);
  for (int j = 0; j < nranks; ++j) {
    new (own_.data() + layout_.fifoOffset() + sizeof(FifoControl) * j) FifoControl();
  }
}

void ShmDomain::attach(const std::vector<int>& localPeers) {
  for (int peer : localPeers) {
    if (peer == rank_ || peer < 0 || peer >= nranks_) continue;
    peers_[peer] = ShmSegment::open(shmSegmentName(tag_, peer), layout_.totalBytes());
    const SegmentHeader* h = header(peer);
    if (h->magic != kShmMagic || h->rank != peer || h->nranks != nranks_ ||
        h->slotBytes != layout_.slotBytes || h->slots != layout_.slots ||
        h->arenaBytes != layout_.arenaBytes) {
      raise(ErrorCode::InvalidUsage,
            "shm segment of rank {} does not match rank {}'s (slot {} vs {}, slots {} vs {}, "
            "arena {} vs {}): set the same LOOM_SHM_* / LOOM_DIRECT_BYTES on every rank",
            peer, rank_, h->slotBytes, layout_.slotBytes, h->slots, layout_.slots, h->arenaBytes,
            layout_.arenaBytes);
    }
  }
}

bool ShmDomain::isMapped(int rank) const {
  return rank == rank_ || (rank >= 0 && rank < nranks_ && peers_[rank].data() != nullptr);
}

char* ShmDomain::base(int rank) {
  if (!isMapped(rank)) {
    raise(ErrorCode::InternalError, "shm segment of rank {} is not mapped on rank {}", rank, rank_);
  }
  return rank == rank_ ? own_.data() : peers_[rank].data();
}

SegmentHeader* ShmDomain::header(int rank) {
  return std::launder(reinterpret_cast<SegmentHeader*>(base(rank)));
}

std::unique_ptr<Link> ShmDomain::makeLink(int peer) {
  char* theirs = base(peer);
  char* mine = base(rank_);
  ShmEndpoint out{std::launder(reinterpret_cast<FifoControl*>(theirs + layout_.fifoOffset() +
                                                              sizeof(FifoControl) * rank_)),
                  theirs + layout_.slotOffset(rank_, 0)};
  ShmEndpoint in{std::launder(reinterpret_cast<FifoControl*>(mine + layout_.fifoOffset() +
                                                             sizeof(FifoControl) * peer)),
                 mine + layout_.slotOffset(peer, 0)};
  return std::make_unique<ShmLink>(peer, out, in, &header(peer)->doorbell, layout_.slotBytes,
                                   layout_.slots);
}

ArenaView ShmDomain::arena(int rank) {
  char* b = base(rank);
  ArenaView view;
  view.header = header(rank);
  for (int parity = 0; parity < 2; ++parity) {
    view.input[parity] = b + layout_.regionOffset(parity, false);
    view.output[parity] = b + layout_.regionOffset(parity, true);
  }
  return view;
}

}  // namespace loom
