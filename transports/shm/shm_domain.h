// The shared-memory world of one communicator on one host: this rank's
// segment, the mapped segments of the other local ranks, links to them, and
// access to everyone's direct arena. Set-up is in phases because segments can
// only be opened once their owners created them; the communicator puts a
// bootstrap barrier between the phases.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transports/link.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_segment.h"

namespace loom {

struct ShmConfig {
  size_t slotBytes = size_t{256} << 10;
  size_t slots = 4;
  size_t arenaBytes = 1 << 20;
};

/// One rank's view of another rank's direct arena.
struct ArenaView {
  SegmentHeader* header = nullptr;
  char* input[2] = {nullptr, nullptr};   // by parity
  char* output[2] = {nullptr, nullptr};  // by parity
};

class ShmDomain {
 public:
  /// Phase 1: create this rank's segment, named from `commTag` and `rank`.
  ShmDomain(uint64_t commTag, int rank, int nranks, const ShmConfig& config);
  /// Phase 2 (after every local rank finished phase 1): map the segments of
  /// `localPeers` (ranks on this host, excluding self).
  void attach(const std::vector<int>& localPeers);
  /// Phase 3 (after every local rank finished phase 2): drop the names.
  void unlinkOwn() { own_.unlink(); }

  std::unique_ptr<Link> makeLink(int peer);
  Doorbell& myDoorbell() { return ownHeader_->doorbell; }
  /// This rank's own header, without the mapping check headerOf makes: every
  /// call writes its status there.
  SegmentHeader& ownHeader() { return *ownHeader_; }
  /// Valid for self and attached peers only.
  ArenaView arena(int rank);
  SegmentHeader& headerOf(int rank) { return *header(rank); }
  bool isMapped(int rank) const;
  size_t arenaBytes() const { return layout_.arenaBytes; }
  size_t slotBytes() const { return layout_.slotBytes; }

 private:
  SegmentHeader* header(int rank);
  char* base(int rank);

  uint64_t tag_;
  int rank_;
  int nranks_;
  SegmentLayout layout_;
  ShmSegment own_;
  SegmentHeader* ownHeader_ = nullptr;  // constructed in own_ by the constructor
  std::vector<ShmSegment> peers_;       // indexed by rank; empty for self and remote ranks
};

std::string shmSegmentName(uint64_t commTag, int rank);

}  // namespace loom
