// Building what the plan walker runs (plan_walker.h): the FIFO memory each rank
// owns, and one rank's plan flattened into a relocatable block of WalkArgs,
// channels, connections and steps.
//
// FIFO memory. Every rank owns one zeroed arena with a block per (channel,
// peer). Block (c, p) of rank r holds the FIFO that carries p's messages to r
// on channel c (its slots, ready flags and low-latency lines, so r polls its
// own memory), the counter p writes when it has consumed r's messages (so r,
// waiting for room, polls its own memory too), and r's persistent message
// counters for both directions. Senders write into their receiver's arena:
// peer pointers in one process, CUDA IPC mappings across processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collectives/plan.h"
#include "collectives/walker/walk_types.h"
#include "core/types.h"

namespace loom::walk {

/// Sizes of every FIFO; the same on all ranks of a communicator.
struct FifoGeometry {
  uint32_t channels = 1;
  uint32_t slotCount = 4;            ///< messages in flight per connection
  uint32_t bulkSlotBytes = 1 << 16;  ///< a bulk message's payload (multiple of 16)
  uint32_t llSlotLines = 1024;       ///< lines per low-latency slot (even)
  /// Calls up to this many bytes (the API's count x element size) take the
  /// low-latency protocol.
  uint64_t llMaxCallBytes = 1 << 16;

  /// Payload bytes of one low-latency message.
  uint32_t llSlotPayloadBytes() const { return llSlotLines * 4; }
  /// Throws InvalidArgument when a size is zero or misaligned.
  void validate() const;
};

/// Byte offsets inside one rank's arena.
class ArenaLayout {
 public:
  ArenaLayout(const FifoGeometry& geometry, int nranks);

  size_t bytes() const { return blockBytes_ * geometry_.channels * static_cast<size_t>(nranks_); }
  /// Block (channel, peer): the FIFO from `peer`, and this rank's counters for it.
  size_t block(uint32_t channel, int peer) const {
    return (static_cast<size_t>(channel) * nranks_ + peer) * blockBytes_;
  }
  static constexpr size_t kReady = 0;                                  // slotCount flags
  size_t consumed() const { return size_t{8} * geometry_.slotCount; }  // written by the peer
  size_t sent() const { return consumed() + 8; }                       // to the peer
  size_t received() const { return consumed() + 16; }                  // from the peer
  size_t slots() const { return slots_; }                              // bulk payload
  size_t lines() const {
    return slots_ + static_cast<size_t>(geometry_.slotCount) * geometry_.bulkSlotBytes;
  }
  const FifoGeometry& geometry() const { return geometry_; }

 private:
  FifoGeometry geometry_;
  int nranks_;
  size_t slots_;
  size_t blockBytes_;
};

/// The protocol a call takes, from what every rank knows alike (the call's
/// count and type), so both ends of every connection agree: low latency while
/// the largest message of the call fits one low-latency slot.
Protocol chooseProtocol(const FifoGeometry& geometry, size_t callBytes);

/// Elements per message for `protocol`.
size_t sliceElementsFor(const FifoGeometry& geometry, Protocol protocol, size_t elementSize);

/// Channel `channel` of `channels`: every step keeps the same share of its
/// range, [count*c/C, count*(c+1)/C) rounded to `unitElements`, so a send and
/// its matching receive (equal counts) are cut alike. Streams are concatenated
/// in order, as the host executor merges them. Empty steps are dropped.
std::vector<Step> channelSteps(const RankPlan& plan, uint32_t channel, uint32_t channels,
                               size_t unitElements);

/// What every call of one walk shares: one launch, one element type.
struct WalkLaunch {
  int rank = 0;
  int nranks = 1;
  DataType type = DataType::Float32;
  uint64_t timeoutNs = 0;
  const volatile uint32_t* abort = nullptr;
  bool systemScope = true;  ///< WalkArgs::systemScope
};

/// An int8 codec on the wire (compression/int8_codec.h's format and math):
/// the call's messages carry int8 encodings of fp32 values, re-encoded at
/// every hop. The walker reads it as: Send encodes src; RecvReduceSend
/// decodes, adds src and encodes the sum; RecvReduce decodes and writes src +
/// the decoded values to dst. A call with a codec walks fp32 with op Sum, on
/// the bulk protocol, and takes no other step kinds. Step j of the plan's
/// (single) stream encodes with counter `counter + j`, so a ring whose step j
/// is hop j draws the host ring's bits (src/compressed/compressed_ring.cc).
struct WireCodec {
  uint32_t block = 0;  ///< elements per codec block; 0: no codec
  bool stochastic = false;
  uint64_t seed = 0;
  uint64_t counter = 0;
  bool active() const { return block != 0; }
};

/// One call of a walk: its plan, op and buffers. A walk of several parts (a
/// group fused into one launch) walks them one after another on each channel.
struct WalkPart {
  const RankPlan* plan = nullptr;
  ReduceOp op = ReduceOp::Sum;
  Protocol protocol = Protocol::Bulk;
  /// Instead of `protocol`, each step's own byte count chooses its protocol
  /// (chooseProtocol): for send/recv, where a step is a whole call whose size
  /// both ends know, though neither knows the other's group.
  bool protocolPerStep = false;
  const char* input = nullptr;  ///< addresses as the walker sees them
  char* output = nullptr;
  char* scratch = nullptr;
  WireCodec codec{};  ///< inactive: messages carry the elements as they are
};

/// One rank's single call, ready to be placed in memory.
struct WalkCall : WalkLaunch {
  ReduceOp op = ReduceOp::Sum;
  Protocol protocol = Protocol::Bulk;
  const char* input = nullptr;  ///< addresses as the walker sees them
  char* output = nullptr;
  char* scratch = nullptr;

  WalkPart partFor(const RankPlan& plan) const;
};

/// A step as channel `c` walks it: its share of a plan step, the part it
/// belongs to and its protocol.
struct ChannelStep {
  Step step;
  uint32_t call = 0;
  Protocol protocol = Protocol::Bulk;
  bool codec = false;     ///< messages carry the part's wire codec
  uint64_t codecKey = 0;  ///< WalkStep::codecKey
};

/// Elements per message of `cs`: its protocol's slot, or whole codec blocks
/// (codecSliceElements) when its messages are encoded.
size_t sliceElementsOf(const ChannelStep& cs, const FifoGeometry& geometry, DataType type,
                       uint32_t codecBlock);

/// Everything channel `channel` walks, in the walker's order: part by part,
/// each part's streams concatenated (channelSteps).
std::vector<ChannelStep> channelWalk(std::span<const WalkPart> parts, DataType type,
                                     const FifoGeometry& geometry, uint32_t channel);

/// The relocatable block: WalkArgs first, then channels, statuses,
/// connections and steps, with every pointer computed for `base`, the
/// address the block will have where the walker runs. `arenas[p]` is rank p's
/// arena as this rank addresses it.
struct WalkProgram {
  std::vector<uint64_t> words;  ///< 8-byte aligned storage
  size_t statusOffset = 0;      ///< where the WalkStatus array starts, in bytes
  uint32_t channels = 0;

  size_t bytes() const { return words.size() * 8; }
  const WalkArgs& args() const { return *reinterpret_cast<const WalkArgs*>(words.data()); }
};

/// Where this rank's FIFOs are, as this rank addresses them.
struct FifoRoutes {
  /// Every rank's arena (a proxied peer's entry is never read).
  std::span<char* const> arenas;
  /// Peers on other hosts (`proxied[p]` nonzero; empty: none): their FIFOs are
  /// this rank's own outbox and inbox arenas (same layout, block (c, p)),
  /// which a proxy (walk_proxy.h) drains to and fills from the network.
  std::span<const uint8_t> proxied;
  char* outbox = nullptr;
  char* inbox = nullptr;
};

/// An upper bound of WalkProgram::bytes() for `channels` channels of at most
/// `connections` peers per direction and `steps` steps each (all calls'
/// together), over `calls` calls.
size_t programBytesBound(uint32_t channels, size_t connections, size_t steps, size_t calls = 1);

/// Builds `launch.rank`'s program walking `parts` in order. Throws
/// InvalidArgument when there is no part, a part has no plan, a plan needs
/// more connections per channel than kMaxConnections or names a peer out of
/// range.
WalkProgram buildWalkProgram(std::span<const WalkPart> parts, const WalkLaunch& launch,
                             const FifoGeometry& geometry, const FifoRoutes& routes,
                             uintptr_t base);
/// One call's program.
WalkProgram buildWalkProgram(const RankPlan& plan, const WalkCall& call,
                             const FifoGeometry& geometry, std::span<char* const> arenas,
                             uintptr_t base);
/// The same with peers reached through a proxy.
WalkProgram buildWalkProgram(const RankPlan& plan, const WalkCall& call,
                             const FifoGeometry& geometry, const FifoRoutes& routes,
                             uintptr_t base);

}  // namespace loom::walk
