// The plain data a plan walker runs on: one rank's plan flattened into steps
// per channel, and the FIFOs (connections) those steps move data through.
//
// The same structs are read by the CUDA kernel (collectives/cuda/walk_kernel.cu)
// and by host threads that emulate it (tests/unit/test_plan_walker.cc), so
// everything here is fixed-size, pointer-and-integer data with no methods that
// allocate. The host builds them (walk_program.h) and, on a GPU, copies them to
// device memory as one block.
#pragma once

#include <cstdint>

#include "math/half.h"  // LOOM_HD

namespace loom::walk {

/// How a message crosses a connection.
///
/// Bulk: the sender fills a slot, then publishes its number in the slot's ready
/// flag; the receiver waits for the flag. Two round trips through memory per
/// message, full bandwidth: for large messages.
///
/// LowLatency: every 4 payload bytes travel with a 4-byte flag in one 8-byte
/// store (a "line"), so the receiver sees data and flag arrive together and
/// needs no separate flag: one trip through memory, half the bandwidth. For
/// small messages, where the trip is the cost.
enum class Protocol : uint8_t { Bulk = 0, LowLatency = 1 };

/// Payload bytes a unit of two low-latency lines carries.
inline constexpr uint32_t kLlUnitBytes = 8;
/// Connections a channel may use per direction (the walker keeps their
/// message counters in fast team memory: 2 x 64 x 8 bytes of shared memory).
inline constexpr uint32_t kMaxConnections = 64;

/// The sender's view of one connection. Slots, flags and lines live in the
/// receiver's memory, so the receiver polls locally; `consumed` lives in the
/// sender's memory for the same reason.
struct SendConnection {
  char* slots = nullptr;               ///< bulk: slotCount x bulkSlotBytes
  uint64_t* ready = nullptr;           ///< bulk: one flag per slot (the message number)
  uint64_t* lines = nullptr;           ///< low latency: slotCount x llSlotLines lines
  const uint64_t* consumed = nullptr;  ///< messages the receiver has finished with
  uint64_t* sent = nullptr;            ///< messages sent so far (persists across calls)
  int32_t peer = -1;                   ///< for error reports
  uint32_t reserved = 0;
};

/// The receiver's view of one connection (see SendConnection).
struct RecvConnection {
  const char* slots = nullptr;
  const uint64_t* ready = nullptr;
  const uint64_t* lines = nullptr;
  uint64_t* consumed = nullptr;  ///< in the sender's memory
  uint64_t* received = nullptr;  ///< messages received so far (persists across calls)
  int32_t peer = -1;
  uint32_t reserved = 0;
};

/// One step of a plan (collectives/plan.h) with its peers replaced by indices
/// into the channel's connections. Offsets and counts are in elements.
struct WalkStep {
  uint8_t kind = 0;       ///< loom::StepKind
  uint8_t finalize = 0;   ///< apply the op's final transform (avg)
  uint8_t srcBuffer = 0;  ///< loom::BufferId
  uint8_t dstBuffer = 0;
  uint8_t protocol = 0;  ///< Protocol of this step's messages
  /// Nonzero: this step's messages are int8 encodings of fp32 values (the
  /// call's wire codec, WalkCallArgs::codecBlock); see codecSliceElements.
  uint8_t codec = 0;
  uint8_t reserved[2] = {};
  int32_t sendConnection = -1;
  int32_t recvConnection = -1;
  uint32_t call = 0;  ///< index into WalkArgs::calls; a channel's steps are grouped by call
  uint64_t srcOffset = 0;
  uint64_t dstOffset = 0;
  uint64_t count = 0;
  /// With a wire codec: the stochastic-rounding key of what this step encodes
  /// (compression/counter_hash.h streamKey); each element's bits are drawn by
  /// its source offset, its index in the tensor.
  uint64_t codecKey = 0;
};

/// What differs between the calls of one walk (a group's calls fused into
/// one launch): their buffers and reduction op.
struct WalkCallArgs {
  const char* input = nullptr;
  char* output = nullptr;
  char* scratch = nullptr;
  uint8_t op = 0;  ///< loom::ReduceOp
  /// Nonzero: the int8 codec rounds stochastically (else to nearest).
  uint8_t codecStochastic = 0;
  uint8_t reserved[2] = {};
  /// Elements per int8 codec block of the steps marked `codec`; 0: no codec.
  uint32_t codecBlock = 0;
};

/// What one team (a thread block on the GPU) walks.
struct WalkChannel {
  const WalkStep* steps = nullptr;
  uint32_t stepCount = 0;
  uint32_t sendCount = 0;
  uint32_t recvCount = 0;
  uint32_t reserved = 0;
  SendConnection* sends = nullptr;
  RecvConnection* recvs = nullptr;
};

enum class WalkError : uint32_t {
  None = 0,
  Timeout = 1,     ///< a wait passed the deadline
  Aborted = 2,     ///< the communicator was aborted
  BadProgram = 3,  ///< a step names a connection or buffer that is not there
};

/// Where a channel stopped, written once by the team that failed.
struct WalkStatus {
  uint32_t error = 0;  ///< WalkError
  int32_t step = -1;
  int32_t peer = -1;
  uint32_t waitingFor = 0;  ///< 1 data, 2 room
};

/// Everything one rank's walk needs. A walk runs one or more calls of one
/// element type; each channel walks its steps call by call.
struct WalkArgs {
  const WalkCallArgs* calls = nullptr;
  const WalkChannel* channels = nullptr;
  WalkStatus* status = nullptr;              ///< one per channel
  const volatile uint32_t* abort = nullptr;  ///< nonzero: stop waiting
  uint64_t timeoutNs = 0;
  uint32_t callCount = 0;
  uint32_t channelCount = 0;
  uint32_t elementSize = 1;
  uint32_t slotCount = 1;
  uint32_t bulkSlotBytes = 0;      ///< payload bytes of a bulk slot
  uint32_t llSlotLines = 0;        ///< lines of a low-latency slot (even)
  uint32_t bulkSliceElements = 1;  ///< elements per bulk message
  uint32_t llSliceElements = 1;    ///< elements per low-latency message
  int32_t nranks = 1;
  uint8_t type = 0;  ///< loom::DataType
  /// Nonzero when a peer's FIFO words are seen by another device or the host
  /// (another GPU, the proxy's pinned boxes): their waits and signals then
  /// order at system scope; zero, when every peer runs on this same device
  /// in this process, the device scope suffices and costs far less.
  uint8_t systemScope = 1;
  uint8_t reserved[2] = {};
};

/// Elements per message of a codec step: whole codec blocks (4 bytes of
/// scale and one byte per element each) as many as a bulk slot holds; 0 when
/// not even one fits.
LOOM_HD constexpr uint64_t codecSliceElements(uint32_t bulkSlotBytes, uint32_t block) {
  return block == 0 ? 0 : static_cast<uint64_t>(bulkSlotBytes) / (block + 4ull) * block;
}

/// Bytes of a codec message of `n` elements: every block's scale, then the codes.
LOOM_HD constexpr uint64_t codecMessageBytes(uint64_t n, uint32_t block) {
  return (n + block - 1) / block * 4 + n;
}

/// The flag a low-latency line of message `message` (1-based) carries: never
/// 0, which is what unused memory holds, and different from the flag of the
/// message that used the slot before it (message - slotCount).
LOOM_HD constexpr uint32_t llFlag(uint64_t message) {
  return static_cast<uint32_t>(message % 0xFFFFFFFFull) + 1;
}

}  // namespace loom::walk
