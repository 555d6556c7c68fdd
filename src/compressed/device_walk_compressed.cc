#include "compressed/device_walk_compressed.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "collectives/walker/codec_ring_plan.h"
#include "compressed/compressed_common.h"
#include "compressed/device_codec.h"
#include "compressed/device_feedback.h"
#include "core/log.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"
#include "device_paths/device_walk_parts.h"
#include "device_paths/exchange_values.h"

namespace loom {
namespace {

/// Where a call's pieces sit in the codec scratch: every rank's encoded
/// block going out, the blocks coming in (reused for the all-gather once
/// summed), this rank's fp32 sum, the codec's own work (top-k's selection,
/// the compensated input with error feedback) and the decodes' statuses.
struct ScratchLayout {
  CompressedAlgorithm algorithm = CompressedAlgorithm::TwoShot;
  compressed::Layout chunks;
  size_t outgoing = 0;
  size_t incoming = 0;
  size_t sum = 0;
  size_t work = 0;
  size_t statuses = 0;
  size_t statusSlots = 0;
  /// The ring only, when the input is not already its fp32 contribution
  /// (ringNeedsContribution): that contribution, and room for a copy of the
  /// residual or zeros beside it.
  size_t contribution = 0;
  size_t spare = 0;
  size_t bytes = 0;
};

size_t roundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

int wrap(int i, int n) { return ((i % n) + n) % n; }

/// Whether the ring needs its fp32 contribution made in scratch: the input
/// is another type, or error feedback adds the residual to it.
bool ringNeedsContribution(const Operation& op, bool feedback) {
  return op.type != DataType::Float32 || feedback;
}

/// The host path's layout (compressed_collectives.cc): all-reduce cuts the
/// tensor into near-equal chunks (or, by sparse all-gather, keeps it whole);
/// reduce-scatter and all-gather use the C API's blocks of `count`. With
/// `feedback`, room for error feedback whether or not `op` keeps it.
ScratchLayout scratchFor(const Comm& comm, const Codec& codec, const Operation& op, bool feedback) {
  const auto n = static_cast<size_t>(comm.nranks);
  ScratchLayout s;
  s.algorithm = op.collective == Collective::AllGather ? CompressedAlgorithm::TwoShot
                                                       : chooseCompressedAlgorithm(comm, op);
  if (s.algorithm == CompressedAlgorithm::SparseAllGather) {
    s.chunks = {1, codec.encodedBytes(op.count), op.count};
  } else if (op.collective == Collective::AllReduce) {
    s.chunks = compressed::layoutFor(codec, op.count, comm.nranks);
  } else {
    s.chunks = {n, codec.encodedBytes(op.count), op.count * n};
  }
  // The largest tensor piece one encode or sum covers.
  const size_t piece = s.chunks.size(0);
  const size_t blocks = roundUp(s.chunks.blockBytes * n, 256);
  s.outgoing = 0;
  s.incoming = blocks;
  s.sum = 2 * blocks;
  s.work = roundUp(s.sum + piece * sizeof(float), 256);
  s.statuses = s.work + deviceCodecWorkBytes(op.codec, piece, feedback);
  s.statusSlots = 2 * n;
  s.bytes = s.statuses + s.statusSlots * sizeof(int);
  if (s.algorithm == CompressedAlgorithm::Ring && ringNeedsContribution(op, feedback)) {
    const size_t tensor = roundUp(s.chunks.total * sizeof(float), 256);
    s.contribution = roundUp(s.bytes, 256);
    s.spare = s.contribution + tensor;
    s.bytes = s.spare + tensor;
  }
  return s;
}

/// Whether the ring walks `op` with the codec fused into its steps: int8
/// whose blocks fit a FIFO slot (walk_program.h, WireCodec); other rings walk
/// hop by hop. The slot size is the same on every rank, so every rank decides
/// alike.
bool ringWalks(const Comm& comm, const Operation& op) {
  return op.codec.kind == CodecKind::Int8 &&
         walk::codecSliceElements(static_cast<uint32_t>(comm.config.cudaSlotBytes),
                                  op.codec.block) > 0;
}

/// Encodes this rank's piece [first, first + count) of op.send into dst,
/// through its error feedback when it has one.
void encodeContribution(DeviceCodec& codec, const Operation& op, float* residual, size_t first,
                        size_t count, char* dst, uint64_t counter) {
  const char* src = static_cast<const char*>(op.send) + first * dataTypeSize(op.type);
  if (residual != nullptr) {
    codec.encodeWithFeedback(src, op.type, count, residual + first, dst, {first, counter});
  } else {
    codec.encode(src, op.type, count, dst, {first, counter});
  }
}

/// The device copy of op's residual (nullptr without error feedback); once
/// per state, the log says error feedback runs on the device.
float* residualFor(Comm& comm, DeviceWalkState& state, const Operation& op, void* stream) {
  if (op.feedback == nullptr) return nullptr;
  if (!state.announcedDeviceFeedback) {
    state.announcedDeviceFeedback = true;
    LOOM_INFO("rank {}: error feedback on the device (the residual kept in device memory)",
              comm.rank);
  }
  return deviceResidual(*op.feedback, state.device, stream);
}

void finishAverage(const Operation& op, int nranks, float* sum, size_t n, void* stream) {
  if (op.op != ReduceOp::Avg || n == 0) return;
  device::deviceRuntime().check(device::cudaKernels().table->avgFinalize(
                                    sum, n, static_cast<int>(DataType::Float32), nranks, stream),
                                "avg finalize");
}

/// Walks `plan` over bytes: `bytes` of `send` out, into `recv`.
void walkBytePlan(Comm& comm, DeviceWalkState& state, const RankPlan& plan, const char* send,
                  char* recv, size_t bytes, void* stream) {
  walk::WalkPart part;
  part.plan = &plan;
  part.protocol = walk::chooseProtocol(state.geometry, bytes);
  part.input = send;
  part.output = recv;
  walk::WalkLaunch launch;
  launch.type = DataType::Uint8;
  launchWalk(comm, state, {&part, 1}, launch, stream);
}

/// Walks a byte collective (all-to-all, or all-gather in place) over the scratch.
void walkBytes(Comm& comm, DeviceWalkState& state, Collective collective, const char* send,
               char* recv, size_t bytes, void* stream) {
  const std::shared_ptr<const RankPlan> plan =
      walkPlan(comm, compressed::byteOperation(collective, send, recv, bytes));
  walkBytePlan(comm, state, *plan, send, recv, bytes, stream);
}

/// compressed::twoShotReduceScatter on the device: returns this rank's sum.
float* reduceScatterOnDevice(Comm& comm, DeviceWalkState& state, DeviceCodec& codec,
                             const Operation& op, const ScratchLayout& s, uint64_t counter,
                             void* stream) {
  const compressed::Layout& l = s.chunks;
  char* outgoing = state.codecScratch + s.outgoing;
  char* incoming = state.codecScratch + s.incoming;
  auto* sum = reinterpret_cast<float*>(state.codecScratch + s.sum);
  float* residual = residualFor(comm, state, op, stream);
  for (int j = 0; j < comm.nranks; ++j) {
    encodeContribution(codec, op, residual, l.offset(j), l.size(j),
                       outgoing + static_cast<size_t>(j) * l.blockBytes, counter);
  }
  if (residual != nullptr) deviceResidualWritten(*op.feedback, stream);
  walkBytes(comm, state, Collective::AllToAll, outgoing, incoming, l.blockBytes, stream);
  const size_t n = l.size(comm.rank);
  // Rank order 0..n-1 per element, the host's order of sums.
  codec.sum(incoming, l.blockBytes, comm.nranks, n, sum);
  finishAverage(op, comm.nranks, sum, n, stream);
  return sum;
}

/// This rank's fp32 contribution for the ring: the input itself (fp32, no
/// error feedback), else input + residual or input + 0 in the scratch; with
/// error feedback the residual becomes what encoding each of this rank's
/// chunks drops, as compressed::ringReduceScatter leaves it.
const float* ringContribution(Comm& comm, DeviceWalkState& state, DeviceCodec& codec,
                              const Operation& op, const ScratchLayout& s, uint64_t counter,
                              void* stream) {
  const compressed::Layout& l = s.chunks;
  if (!ringNeedsContribution(op, op.feedback != nullptr)) return static_cast<const float*>(op.send);
  float* residual = residualFor(comm, state, op, stream);
  const device::DeviceRuntime& rt = device::deviceRuntime();
  auto* contribution = reinterpret_cast<float*>(state.codecScratch + s.contribution);
  auto* spare = reinterpret_cast<float*>(state.codecScratch + s.spare);
  const size_t bytes = l.total * sizeof(float);
  // launchCompensate rewrites the residual it reads, so it reads a copy (or
  // zeros, only to widen the input: +0 turns a -0 input into +0, which no
  // encoding tells apart).
  if (residual != nullptr) {
    rt.check(rt.memcpyAsync(spare, residual, bytes, device::CopyKind::DeviceToDevice, stream),
             "copy of the residual");
  } else {
    rt.check(rt.memsetAsync(spare, 0, bytes, stream), "cudaMemsetAsync");
  }
  rt.check(device::cudaKernels().table->compensate(op.send, static_cast<int>(op.type), l.total,
                                                   spare, contribution, stream),
           "the ring's fp32 contribution");
  if (residual != nullptr) {
    char* outgoing = state.codecScratch + s.outgoing;
    for (int j = 0; j < comm.nranks; ++j) {
      encodeContribution(codec, op, residual, l.offset(j), l.size(j),
                         outgoing + static_cast<size_t>(j) * l.blockBytes, counter);
    }
    deviceResidualWritten(*op.feedback, stream);
  }
  return contribution;
}

/// compressed::ringReduceScatter on the device: one walk whose every step
/// decodes what arrives, adds this rank's chunk and re-encodes it for the
/// next hop (the wire codec). Returns this rank's sum.
float* ringReduceScatterOnDevice(Comm& comm, DeviceWalkState& state, DeviceCodec& codec,
                                 const Operation& op, const ScratchLayout& s, uint64_t counter,
                                 void* stream) {
  const compressed::Layout& l = s.chunks;
  const float* contribution = ringContribution(comm, state, codec, op, s, counter, stream);
  auto* sum = reinterpret_cast<float*>(state.codecScratch + s.sum);
  if (comm.nranks == 1) {
    const device::DeviceRuntime& rt = device::deviceRuntime();
    rt.check(rt.memcpyAsync(sum, contribution, l.total * sizeof(float),
                            device::CopyKind::DeviceToDevice, stream),
             "copy of the only rank's sum");
  } else {
    const RankPlan plan = walk::codecRingReduceScatterPlan(comm.rank, comm.nranks, l.total);
    walk::WalkPart part;
    part.plan = &plan;
    part.input = reinterpret_cast<const char*>(contribution);
    part.output = reinterpret_cast<char*>(sum);
    part.codec = {op.codec.block, op.codec.stochastic, op.codec.seed, counter};
    walk::WalkLaunch launch;
    launch.type = DataType::Float32;
    launchWalk(comm, state, {&part, 1}, launch, stream);
  }
  finishAverage(op, comm.nranks, sum, l.size(comm.rank), stream);
  return sum;
}

/// Walks one hop of the ring: `bytes` of `sending` to the right neighbour,
/// as many from the left into `arriving`.
void walkHop(Comm& comm, DeviceWalkState& state, const char* sending, char* arriving, size_t bytes,
             void* stream) {
  walkBytePlan(comm, state, walk::ringHopPlan(comm.rank, comm.nranks, bytes), sending, arriving,
               bytes, stream);
}

/// compressed::ringReduceScatter on the device hop by hop, for codecs the
/// walker's steps cannot carry (top-k; int8 blocks larger than a slot):
/// each hop walks the encoded chunk to the right, then the codec's kernels
/// add this rank's chunk to what arrived and encode the sum for the next
/// hop, with the host's counters. Returns this rank's sum.
float* hopRingReduceScatterOnDevice(Comm& comm, DeviceWalkState& state, DeviceCodec& codec,
                                    const Operation& op, const ScratchLayout& s, uint64_t counter,
                                    void* stream) {
  const compressed::Layout& l = s.chunks;
  const int n = comm.nranks;
  const int r = comm.rank;
  const device::DeviceRuntime& rt = device::deviceRuntime();
  const float* contribution = ringContribution(comm, state, codec, op, s, counter, stream);
  char* sending = state.codecScratch + s.outgoing;
  char* arriving = state.codecScratch + s.incoming;
  auto* partial = reinterpret_cast<float*>(state.codecScratch + s.sum);
  auto copyOwn = [&](int chunk) {
    rt.check(rt.memcpyAsync(partial, contribution + l.offset(chunk), l.size(chunk) * sizeof(float),
                            device::CopyKind::DeviceToDevice, stream),
             "copy of this rank's chunk");
  };
  int chunk = wrap(r - 1, n);
  codec.encode(contribution + l.offset(chunk), DataType::Float32, l.size(chunk), sending,
               {l.offset(chunk), counter});
  for (int hop = 0; hop < n - 1; ++hop) {
    walkHop(comm, state, sending, arriving, l.blockBytes, stream);
    chunk = wrap(r - 2 - hop, n);
    copyOwn(chunk);
    codec.decodeAccumulate(arriving, l.size(chunk), partial);
    if (hop + 1 < n - 1) {
      codec.encode(partial, DataType::Float32, l.size(chunk), sending,
                   {l.offset(chunk), counter + 1 + static_cast<uint64_t>(hop)});
    }
  }
  if (n == 1) copyOwn(0);  // no hop: the sum is the contribution itself
  finishAverage(op, n, partial, l.size(r), stream);
  return partial;
}

/// The reduce-scatter half of a compressed all-reduce or reduce-scatter.
float* reduceScatterWith(Comm& comm, DeviceWalkState& state, DeviceCodec& codec,
                         const Operation& op, const ScratchLayout& s, uint64_t counter,
                         void* stream) {
  if (s.algorithm == CompressedAlgorithm::Ring) {
    return ringWalks(comm, op)
               ? ringReduceScatterOnDevice(comm, state, codec, op, s, counter, stream)
               : hopRingReduceScatterOnDevice(comm, state, codec, op, s, counter, stream);
  }
  return reduceScatterOnDevice(comm, state, codec, op, s, counter, stream);
}

/// compressed::sparseAllGatherAllReduce on the device: every rank's
/// selection of its whole contribution, all-gathered, summed in rank order
/// and stored in the output's type.
void sparseAllGatherOnDevice(Comm& comm, DeviceWalkState& state, DeviceCodec& codec,
                             const Operation& op, const ScratchLayout& s, uint64_t counter,
                             void* stream) {
  const size_t blockBytes = s.chunks.blockBytes;
  char* gathered = state.codecScratch + s.incoming;
  char* mine = gathered + static_cast<size_t>(comm.rank) * blockBytes;
  auto* sum = reinterpret_cast<float*>(state.codecScratch + s.sum);
  float* residual = residualFor(comm, state, op, stream);
  encodeContribution(codec, op, residual, 0, op.count, mine, counter);
  if (residual != nullptr) deviceResidualWritten(*op.feedback, stream);
  walkBytes(comm, state, Collective::AllGather, mine, gathered, blockBytes, stream);
  codec.sum(gathered, blockBytes, comm.nranks, op.count, sum);
  finishAverage(op, comm.nranks, sum, op.count, stream);
  device::deviceRuntime().check(device::cudaKernels().table->narrowFloats(
                                    sum, op.count, static_cast<int>(op.type), op.recv, stream),
                                "narrow the sum to the output type");
}

}  // namespace

bool walksCompressed(const Comm& comm, const Operation& op) {
  if (op.codec.kind != CodecKind::Int8 && op.codec.kind != CodecKind::Topk) return false;
  if (op.collective == Collective::AllGather) return true;
  const CompressedAlgorithm algorithm = chooseCompressedAlgorithm(comm, op);
  return algorithm == CompressedAlgorithm::TwoShot || algorithm == CompressedAlgorithm::Ring ||
         (algorithm == CompressedAlgorithm::SparseAllGather &&
          op.collective == Collective::AllReduce);
}

size_t compressedScratchBytes(const Comm& comm, const Operation& op) {
  if (op.codec.kind == CodecKind::None || op.count == 0) return 0;
  return scratchFor(comm, *makeCodec(op.codec), op, /*feedback=*/true).bytes;
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
  const ScratchLayout s = scratchFor(comm, *hostCodec, op, op.feedback != nullptr);
  if (s.bytes > state.codecScratchBytes) {
    raise(ErrorCode::InternalError, "compressed call needs {} B of scratch, {} B were agreed",
          s.bytes, state.codecScratchBytes);
  }
  const device::DeviceRuntime& rt = device::deviceRuntime();
  // The previous compressed call may still be reading the scratch on another stream.
  if (state.codecUsed)
    rt.check(rt.streamWaitEvent(stream, state.codecDone, 0), "cudaStreamWaitEvent");
  DeviceCodecWork work;
  work.work = state.codecScratch + s.work;
  work.statuses = reinterpret_cast<int*>(state.codecScratch + s.statuses);
  work.statusSlots = s.statusSlots;
  const std::unique_ptr<DeviceCodec> codec = makeDeviceCodec(op.codec, work, stream);
  const compressed::Layout& l = s.chunks;
  const size_t es = dataTypeSize(op.type);
  char* gathered = state.codecScratch + s.incoming;
  auto* out = static_cast<char*>(op.recv);
  const uint64_t last = compressed::finalCounter(s.algorithm, comm.nranks, counter);
  switch (op.collective) {
    case Collective::AllReduce: {
      if (s.algorithm == CompressedAlgorithm::SparseAllGather) {
        sparseAllGatherOnDevice(comm, state, *codec, op, s, counter, stream);
        break;
      }
      const float* sum = reduceScatterWith(comm, state, *codec, op, s, counter, stream);
      char* mine = gathered + static_cast<size_t>(comm.rank) * l.blockBytes;
      codec->encode(sum, DataType::Float32, l.size(comm.rank), mine, {l.offset(comm.rank), last});
      walkBytes(comm, state, Collective::AllGather, mine, gathered, l.blockBytes, stream);
      for (int j = 0; j < comm.nranks; ++j) {
        codec->decode(gathered + static_cast<size_t>(j) * l.blockBytes, l.size(j), op.type,
                      out + l.offset(j) * es);
      }
      break;
    }
    case Collective::ReduceScatter: {
      const float* sum = reduceScatterWith(comm, state, *codec, op, s, counter, stream);
      // Rounded through the codec once, as all-reduce would hand it out.
      char* encoded = state.codecScratch + s.outgoing;
      codec->encode(sum, DataType::Float32, op.count, encoded, {l.offset(comm.rank), last});
      codec->decode(encoded, op.count, op.type, out);
      break;
    }
    case Collective::AllGather: {
      char* mine = gathered + static_cast<size_t>(comm.rank) * l.blockBytes;
      codec->encode(op.send, op.type, op.count, mine,
                    {static_cast<uint64_t>(comm.rank) * op.count, counter});
      walkBytes(comm, state, Collective::AllGather, mine, gathered, l.blockBytes, stream);
      for (int j = 0; j < comm.nranks; ++j) {
        codec->decode(gathered + static_cast<size_t>(j) * l.blockBytes, op.count, op.type,
                      out + static_cast<size_t>(j) * op.count * es);
      }
      break;
    }
    default:
      raise(ErrorCode::InternalError, "no compressed form of {} on the device",
            toString(op.collective));
  }
  // The decodes' verdicts on what peers sent, read once this call is done
  // (compressedCallFailure, maybe on loomCommGetAsyncError's thread).
  const size_t statuses = codec->statusesUsed();
  if (statuses > 0) {
    rt.check(rt.memcpyAsync(state.codecStatusMirror, work.statuses, statuses * sizeof(int),
                            device::CopyKind::DeviceToHost, stream),
             "cudaMemcpyAsync of the decode statuses");
  }
  rt.check(rt.eventRecord(state.codecDone, stream), "cudaEventRecord");
  {
    const std::lock_guard<std::mutex> lock(state.statusMutex);
    state.codecUsed = true;
    state.codecStatusCount = statuses;
  }
  // One line per codec, algorithm and form (the ring fused or by hops).
  const bool fused = s.algorithm == CompressedAlgorithm::Ring && ringWalks(comm, op);
  const auto formBit =
      static_cast<uint32_t>(1U << (static_cast<unsigned>(op.codec.kind) * 8 +
                                   static_cast<unsigned>(s.algorithm) * 2 + (fused ? 1U : 0U)));
  if ((state.announcedCodecs & formBit) == 0) {
    state.announcedCodecs |= formBit;
    const char* how = fused ? "decode, add and re-encode fused into the ring's steps"
                      : s.algorithm == CompressedAlgorithm::Ring
                          ? "codec kernels between the ring's hops"
                          : "codec kernels and byte walks";
    LOOM_INFO(
        "rank {}: compressed collectives run on the device ({} {}: {}; first: {} of {} "
        "elements)",
        comm.rank, codecKindName(op.codec.kind), compressedAlgorithmName(s.algorithm), how,
        toString(op.collective), op.count);
  }
}

std::string compressedCallFailure(DeviceWalkState& state) {
  // Called with state.statusMutex held (finishedWalkFailure).
  if (!state.codecUsed || state.codecStatusCount == 0 ||
      device::deviceRuntime().eventQuery(state.codecDone) != 0) {
    return {};
  }
  const size_t count = std::exchange(state.codecStatusCount, 0);
  for (size_t i = 0; i < count; ++i) {
    if (state.codecStatusMirror[i] != 0) {
      return "a compressed collective received a malformed top-k encoding (its decode wrote "
             "nothing)";
    }
  }
  return {};
}

}  // namespace loom
