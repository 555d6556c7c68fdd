#include "comm/device_walk_compressed.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "comm/compressed_common.h"
#include "comm/device_feedback.h"
#include "comm/device_walk_parts.h"
#include "comm/exchange_values.h"
#include "core/log.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"

namespace loom {
namespace {

/// Where a call's pieces sit in the codec scratch: every rank's encoded
/// block going out, the blocks coming in (reused for the all-gather once
/// summed), and this rank's fp32 sum.
struct ScratchLayout {
  compressed::Layout chunks;
  size_t outgoing = 0;
  size_t incoming = 0;
  size_t sum = 0;
  size_t bytes = 0;
};

size_t roundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

/// The host path's layout (compressed_collectives.cc): all-reduce cuts the
/// tensor into near-equal chunks; reduce-scatter and all-gather use the C
/// API's blocks of `count`.
ScratchLayout scratchFor(const Comm& comm, const Codec& codec, const Operation& op) {
  const auto n = static_cast<size_t>(comm.nranks);
  ScratchLayout s;
  if (op.collective == Collective::AllReduce) {
    s.chunks = compressed::layoutFor(codec, op.count, comm.nranks);
  } else {
    s.chunks = {n, codec.encodedBytes(op.count), op.count * n};
  }
  const size_t blocks = roundUp(s.chunks.blockBytes * n, 16);
  s.outgoing = 0;
  s.incoming = blocks;
  s.sum = 2 * blocks;
  s.bytes = s.sum + roundUp(s.chunks.size(0) * sizeof(float), 16);
  return s;
}

/// The device kernels of the int8 codec `config`, checked.
class DeviceInt8 {
 public:
  DeviceInt8(const CodecConfig& config, void* stream)
      : config_(config), stream_(stream), k_(*device::cudaKernels().table) {}

  void encode(const void* src, DataType type, size_t n, void* dst,
              const EncodeContext& context) const {
    check(k_.int8Encode(src, static_cast<int>(type), n, dst, config_.block,
                        config_.stochastic ? 1 : 0, config_.seed, context.firstIndex,
                        context.counter, stream_),
          "int8 encode");
  }
  /// encode of src + residual, updating the residual (ErrorFeedback's steps).
  void encodeWithFeedback(const void* src, DataType type, size_t n, float* residual, void* dst,
                          const EncodeContext& context) const {
    check(k_.int8EncodeFeedback(src, static_cast<int>(type), n, residual, dst, config_.block,
                                config_.stochastic ? 1 : 0, config_.seed, context.firstIndex,
                                context.counter, stream_),
          "int8 encode with error feedback");
  }
  void decode(const void* src, size_t n, DataType type, void* out) const {
    check(k_.int8Decode(src, n, config_.block, static_cast<int>(type), out, stream_),
          "int8 decode");
  }
  /// sum = the `sources` encodings at src + r * stride, added in order r.
  void decodeSum(const void* src, size_t stride, int sources, size_t n, float* sum) const {
    check(k_.int8DecodeSum(src, stride, sources, n, config_.block, sum, stream_),
          "int8 decode-sum");
  }

 private:
  static void check(int status, const char* what) { device::deviceRuntime().check(status, what); }
  CodecConfig config_;
  void* stream_;
  const LoomCudaKernels& k_;
};

/// Walks a byte collective (all-to-all, or all-gather in place) over the scratch.
void walkBytes(Comm& comm, DeviceWalkState& state, Collective collective, const char* send,
               char* recv, size_t bytes, void* stream) {
  const std::shared_ptr<const RankPlan> plan =
      walkPlan(comm, compressed::byteOperation(collective, send, recv, bytes));
  walk::WalkPart part;
  part.plan = plan.get();
  part.protocol = walk::chooseProtocol(state.geometry, bytes);
  part.input = send;
  part.output = recv;
  walk::WalkLaunch launch;
  launch.type = DataType::Uint8;
  launchWalk(comm, state, {&part, 1}, launch, stream);
}

/// compressed::twoShotReduceScatter on the device: returns this rank's sum.
float* reduceScatterOnDevice(Comm& comm, DeviceWalkState& state, const DeviceInt8& codec,
                             const Operation& op, const ScratchLayout& s, uint64_t counter,
                             void* stream) {
  const compressed::Layout& l = s.chunks;
  char* outgoing = state.codecScratch + s.outgoing;
  char* incoming = state.codecScratch + s.incoming;
  auto* sum = reinterpret_cast<float*>(state.codecScratch + s.sum);
  const size_t es = dataTypeSize(op.type);
  // With error feedback the kernels compensate with the residual and update
  // it as they encode (the host's compensate, encode, update).
  float* residual =
      op.feedback != nullptr ? deviceResidual(*op.feedback, state.device, stream) : nullptr;
  for (int j = 0; j < comm.nranks; ++j) {
    const char* chunk = static_cast<const char*>(op.send) + l.offset(j) * es;
    char* encoded = outgoing + static_cast<size_t>(j) * l.blockBytes;
    if (residual != nullptr) {
      codec.encodeWithFeedback(chunk, op.type, l.size(j), residual + l.offset(j), encoded,
                               {l.offset(j), counter});
    } else {
      codec.encode(chunk, op.type, l.size(j), encoded, {l.offset(j), counter});
    }
  }
  if (residual != nullptr) {
    deviceResidualWritten(*op.feedback, stream);
    if (!state.announcedDeviceFeedback) {
      state.announcedDeviceFeedback = true;
      LOOM_INFO("rank {}: error feedback on the device (the residual kept in device memory)",
                comm.rank);
    }
  }
  walkBytes(comm, state, Collective::AllToAll, outgoing, incoming, l.blockBytes, stream);
  const size_t n = l.size(comm.rank);
  // Rank order 0..n-1 per element, the host's order of sums, in one pass.
  codec.decodeSum(incoming, l.blockBytes, comm.nranks, n, sum);
  if (op.op == ReduceOp::Avg && n > 0) {
    device::deviceRuntime().check(
        device::cudaKernels().table->avgFinalize(sum, n, static_cast<int>(DataType::Float32),
                                                 comm.nranks, stream),
        "avg finalize");
  }
  return sum;
}

}  // namespace

bool walksCompressed(const Comm& comm, const Operation& op) {
  if (op.codec.kind != CodecKind::Int8) return false;
  return op.collective == Collective::AllGather ||
         chooseCompressedAlgorithm(comm, op) == CompressedAlgorithm::TwoShot;
}

size_t compressedScratchBytes(const Comm& comm, const Operation& op) {
  if (op.codec.kind == CodecKind::None || op.count == 0) return 0;
  return scratchFor(comm, *makeCodec(op.codec), op).bytes;
}

void growCodecScratch(Comm& comm, DeviceWalkState& state, size_t bytes) {
  if (bytes <= state.codecScratchBytes) return;
  const device::DeviceRuntime& rt = device::deviceRuntime();
  if (state.codecScratch != nullptr) {
    // The last compressed call's kernels may still read it.
    if (state.codecUsed) rt.check(rt.eventSynchronize(state.codecDone), "cudaEventSynchronize");
    rt.check(rt.free(state.codecScratch), "cudaFree");
    state.codecScratch = nullptr;
    state.codecScratchBytes = 0;
  }
  void* scratch = nullptr;
  const device::CudaStatus status = rt.malloc(&scratch, bytes);
  if (status != 0) rt.getLastError();
  // No rank launches before every rank allocated; a rank that could not
  // allocate fails with all the others instead of leaving them waiting.
  const std::vector<int32_t> allocated = allGatherValue(comm, int32_t{status == 0 ? 1 : 0});
  std::vector<int> failed;
  for (size_t p = 0; p < allocated.size(); ++p) {
    if (allocated[p] == 0) failed.push_back(static_cast<int>(p));
  }
  if (!failed.empty()) {
    if (scratch != nullptr) rt.free(scratch);
    raise(ErrorCode::CudaError,
          "rank(s) {} could not allocate {} B of device scratch for compressed collectives",
          fmt::join(failed, ", "), bytes);
  }
  state.codecScratch = static_cast<char*>(scratch);
  state.codecScratchBytes = bytes;
}

void walkCompressed(Comm& comm, DeviceWalkState& state, const Operation& op, void* stream) {
  recordCompressedCall(comm, op);
  if (op.count == 0) return;
  const uint64_t counter = compressed::takeCounters(comm);
  const auto hostCodec = makeCodec(op.codec);
  const ScratchLayout s = scratchFor(comm, *hostCodec, op);
  if (s.bytes > state.codecScratchBytes) {
    raise(ErrorCode::InternalError, "compressed call needs {} B of scratch, {} B were agreed",
          s.bytes, state.codecScratchBytes);
  }
  const device::DeviceRuntime& rt = device::deviceRuntime();
  // The previous compressed call may still be reading the scratch on another stream.
  if (state.codecUsed)
    rt.check(rt.streamWaitEvent(stream, state.codecDone, 0), "cudaStreamWaitEvent");
  const DeviceInt8 codec(op.codec, stream);
  const compressed::Layout& l = s.chunks;
  const size_t es = dataTypeSize(op.type);
  char* gathered = state.codecScratch + s.incoming;
  auto* out = static_cast<char*>(op.recv);
  const uint64_t last =
      compressed::finalCounter(CompressedAlgorithm::TwoShot, comm.nranks, counter);
  switch (op.collective) {
    case Collective::AllReduce: {
      const float* sum = reduceScatterOnDevice(comm, state, codec, op, s, counter, stream);
      char* mine = gathered + static_cast<size_t>(comm.rank) * l.blockBytes;
      codec.encode(sum, DataType::Float32, l.size(comm.rank), mine, {l.offset(comm.rank), last});
      walkBytes(comm, state, Collective::AllGather, mine, gathered, l.blockBytes, stream);
      for (int j = 0; j < comm.nranks; ++j) {
        codec.decode(gathered + static_cast<size_t>(j) * l.blockBytes, l.size(j), op.type,
                     out + l.offset(j) * es);
      }
      break;
    }
    case Collective::ReduceScatter: {
      const float* sum = reduceScatterOnDevice(comm, state, codec, op, s, counter, stream);
      // Rounded through the codec once, as all-reduce would hand it out.
      char* encoded = state.codecScratch + s.outgoing;
      codec.encode(sum, DataType::Float32, op.count, encoded, {l.offset(comm.rank), last});
      codec.decode(encoded, op.count, op.type, out);
      break;
    }
    case Collective::AllGather: {
      char* mine = gathered + static_cast<size_t>(comm.rank) * l.blockBytes;
      codec.encode(op.send, op.type, op.count, mine,
                   {static_cast<uint64_t>(comm.rank) * op.count, counter});
      walkBytes(comm, state, Collective::AllGather, mine, gathered, l.blockBytes, stream);
      for (int j = 0; j < comm.nranks; ++j) {
        codec.decode(gathered + static_cast<size_t>(j) * l.blockBytes, op.count, op.type,
                     out + static_cast<size_t>(j) * op.count * es);
      }
      break;
    }
    default:
      raise(ErrorCode::InternalError, "no compressed form of {} on the device",
            toString(op.collective));
  }
  rt.check(rt.eventRecord(state.codecDone, stream), "cudaEventRecord");
  state.codecUsed = true;
  if (!state.announcedCompression) {
    state.announcedCompression = true;
    LOOM_INFO(
        "rank {}: compressed collectives run on the device (int8 two-shot: codec kernels "
        "and byte walks; first: {} of {} elements)",
        comm.rank, toString(op.collective), op.count);
  }
}

}  // namespace loom
