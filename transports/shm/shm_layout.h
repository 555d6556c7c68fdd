// Layout of one rank's shared-memory segment. The segment is written by peers
// (they push messages into its inbox FIFOs and ring its doorbell) and read by
// peers (its direct-arena regions). Counters sit on their own cache lines so
// the sender's tail and the receiver's head never share a line.
//
//   [SegmentHeader][FifoControl x nranks][slot data x nranks][direct arena]
//
// FIFO j in rank r's segment carries messages from rank j to rank r.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/doorbell.h"
#include "transports/shm/shared_buffer.h"

namespace loom {

inline constexpr uint64_t kShmMagic = 0x4c4f4f4d53484d34ULL;  // "LOOMSHM4"
inline constexpr int kMaxShmSlots = 16;

/// A message small enough to share one cache line with its round number: a
/// reader that sees the round also holds the data, so a tiny all-reduce costs
/// one cache-line transfer per peer instead of two (flag, then data). `call`
/// fingerprints the call the round belongs to (written before `round`), so a
/// rank in a different call is noticed at no extra transfer.
struct alignas(64) SmallSlot {
  std::atomic<uint64_t> round;
  uint64_t call;
  char data[48];
};
inline constexpr size_t kSmallSlotBytes = sizeof(SmallSlot::data);

/// What a rank is doing, published for hang reports: when a wait times out,
/// the error names what every local peer was in. Written by its rank at the
/// start and end of each collective (own cache line, never read on the hot path).
struct alignas(64) RankStatus {
  std::atomic<uint64_t> sequence;    // collectives started on this comm
  std::atomic<uint32_t> collective;  // a Collective value, while busy
  std::atomic<uint32_t> busy;        // 1 inside a collective or group
  std::atomic<uint64_t> count;
  std::atomic<uint32_t> shape;  // DataType | ReduceOp << 8
  std::atomic<int32_t> root;
  /// The rank that revoked the communicator + 1; 0 while not revoked. Written
  /// by the revoking rank into every local rank's status (its own line, so
  /// the check at every call's start reads a line this rank already owns).
  std::atomic<int32_t> revokedBy;
  /// The sequence number + 1 of the last call this rank gave up on (0: none),
  /// so a local peer still waiting in it (say, resumed from SIGSTOP) learns
  /// that it cannot complete instead of waiting for its own deadline.
  std::atomic<uint64_t> failedCall;
  std::atomic<int64_t> failedAtNs;  // when, on the host's steady clock (written first)
};

struct alignas(64) SegmentHeader {
  uint64_t magic;
  int32_t rank;
  int32_t nranks;
  uint64_t slotBytes;
  uint64_t slots;
  uint64_t arenaBytes;
  /// Where this header is mapped in its owner's process: peers in other
  /// processes read `magic` there once to learn whether cross-memory attach
  /// is permitted (transports/shm/peer_memory.h).
  uint64_t ownerAddress;
  alignas(64) Doorbell doorbell;
  // Direct arena sequence numbers this rank publishes (see direct executor).
  alignas(64) std::atomic<uint64_t> inputSeq;
  /// By round parity: the fingerprint of the call the round belongs to,
  /// written before inputSeq publishes the round (same cache line).
  uint64_t inputCall[2];
  /// By round parity, in a call's first arena round where only loomMemAlloc
  /// buffers are read in place: 1 if this rank's buffers are such, so every
  /// rank learns alike whether the next call may run single-copy
  /// (DirectOptions::sharedBuffers). Written before inputSeq publishes the round.
  uint32_t sharedOffer[2];
  /// Rank 0's measured decisions (MeasuredChoice::decision) by slot (the
  /// arena stores of all-reduce, all-gather and reduce-scatter, then the
  /// two-rank sum) and round parity, written before inputSeq publishes the
  /// round: by parity, so that a peer still reading round s's word cannot
  /// find round s+1's there (rank 0 starts round s+2 only after every rank
  /// published round s+1, which each does after reading).
  alignas(64) std::atomic<uint64_t> decisions[4][2];
  alignas(64) std::atomic<uint64_t> outputSeq;
  SmallSlot small[2];  // by round parity
  // Single-copy rounds: the user buffers (addresses in this rank's process)
  // that peers read directly, valid for the round in inputSeq; written before
  // inputSeq is published.
  alignas(64) uint64_t exposedInput;
  uint64_t exposedOutput;
  /// Where exposedInput and exposedOutput lie in loomMemAlloc allocations
  /// (invalid where they do not): peers in other processes map those.
  SharedFileRef exposedInputFile;
  SharedFileRef exposedOutputFile;
  /// The last single-copy round in which this rank finished reading its peers.
  alignas(64) std::atomic<uint64_t> releasedSeq;
  /// The last single-copy round this rank left early (an error, an abort):
  /// from then on its buffers are not to be read. Peers waiting on it fail.
  alignas(64) std::atomic<uint64_t> withdrawnSeq;
  /// Thread ranks reading this rank's buffers by pointer at this moment. A
  /// rank that leaves a round early waits until this is 0, so no reader
  /// touches its buffers after its call returned (DirectExecutor).
  std::atomic<uint32_t> pointerReaders;
  RankStatus status;
};

struct FifoControl {
  alignas(64) std::atomic<uint64_t> tail;  // messages published by the sender
  alignas(64) std::atomic<uint64_t> head;  // messages consumed by the receiver
  /// Per slot: the message's byte count, and its call stamp in the high 32
  /// bits (Link::stampSends; slots are far below 4 GiB).
  alignas(64) uint64_t sizes[kMaxShmSlots];
};

struct SegmentLayout {
  size_t slotBytes = 0;
  size_t slots = 0;
  size_t arenaBytes = 0;  // one region; the arena holds 2 parities x (input, output)
  int nranks = 0;

  static size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }
  size_t fifoOffset() const { return roundUp(sizeof(SegmentHeader), 4096); }
  size_t slotDataOffset() const {
    return roundUp(fifoOffset() + sizeof(FifoControl) * static_cast<size_t>(nranks), 4096);
  }
  size_t slotOffset(int sender, size_t slot) const {
    return slotDataOffset() + (static_cast<size_t>(sender) * slots + slot) * slotBytes;
  }
  size_t arenaOffset() const { return roundUp(slotOffset(nranks, 0), 4096); }
  /// parity in {0,1}; output=false for the input region.
  size_t regionOffset(int parity, bool output) const {
    return arenaOffset() + (static_cast<size_t>(parity) * 2 + (output ? 1 : 0)) * arenaBytes;
  }
  size_t totalBytes() const { return arenaOffset() + 4 * arenaBytes; }
};

}  // namespace loom
