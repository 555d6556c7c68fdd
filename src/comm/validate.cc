#include <algorithm>
#include <cstdint>

#include "comm/operation.h"
#include "device/buffer_rules.h"
#include "device/memory_kind.h"

namespace loom {

bool isReduction(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}

namespace {

bool hasRoot(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter || c == Collective::Send || c == Collective::Recv;
}

bool overlaps(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

}  // namespace

bool isPointToPoint(const Operation& op) {
  return op.collective == Collective::Send || op.collective == Collective::Recv;
}

bool hasCollective(std::span<const Operation> ops) {
  return std::any_of(ops.begin(), ops.end(),
                     [](const Operation& op) { return !isPointToPoint(op); });
}

int deviceOf(const Operation& op) {
  return device::deviceHolding(device::deviceRuntime(), op.recv != nullptr ? op.recv : op.send);
}

bool isInPlace(const Comm& comm, const Operation& op) {
  const auto* s = static_cast<const char*>(op.send);
  const auto* r = static_cast<const char*>(op.recv);
  const size_t blockBytes = op.count * dataTypeSize(op.type);
  switch (op.collective) {
    case Collective::AllGather:
    case Collective::Gather:
      return r != nullptr && s == r + static_cast<size_t>(comm.rank) * blockBytes;
    case Collective::ReduceScatter:
    case Collective::Scatter:
      return s != nullptr && r == s + static_cast<size_t>(comm.rank) * blockBytes;
    case Collective::AllToAll:
      return false;
    default:
      return s == r && s != nullptr;
  }
}

void validateOperation(const Comm& comm, Operation& op) {
  const std::string_view name = collectiveName(op.collective);
  const int type = op.callerType.value_or(static_cast<int>(op.type));
  if (type < 0 || type >= static_cast<int>(kNumDataTypes)) {
    raise(ErrorCode::InvalidArgument, "{}: datatype {} is not a loomDataType_t (0..{})", name, type,
          kNumDataTypes - 1);
  }
  const int reduceOp = op.callerOp.value_or(static_cast<int>(op.op));
  if (isReduction(op.collective) && (reduceOp < 0 || reduceOp >= kNumReduceOps)) {
    raise(ErrorCode::InvalidArgument, "{}: op {} is not a loomRedOp_t (0..{})", name, reduceOp,
          kNumReduceOps - 1);
  }
  if (hasRoot(op.collective) && (op.root < 0 || op.root >= comm.nranks)) {
    raise(ErrorCode::InvalidArgument, "{}: {} {} is outside [0, {})", name,
          op.collective == Collective::Send || op.collective == Collective::Recv ? "peer" : "root",
          op.root, comm.nranks);
  }
  if (op.codec.kind != CodecKind::None) {
    const bool compressible = op.collective == Collective::AllReduce ||
                              op.collective == Collective::ReduceScatter ||
                              op.collective == Collective::AllGather;
    if (!compressible) {
      raise(ErrorCode::InvalidArgument,
            "{}: compression applies to allreduce, reducescatter and "
            "allgather only",
            name);
    }
    if (op.type != DataType::Float32 && op.type != DataType::Float16 &&
        op.type != DataType::Bfloat16) {
      raise(ErrorCode::InvalidArgument,
            "{}: compression '{}' needs float32, float16 or bfloat16 data, not {}", name,
            toString(op.codec), dataTypeName(op.type));
    }
    if (isReduction(op.collective) && op.op != ReduceOp::Sum && op.op != ReduceOp::Avg) {
      raise(ErrorCode::InvalidArgument, "{}: compression '{}' works with sum and avg, not {}", name,
            toString(op.codec), reduceOpName(op.op));
    }
    validateCodecConfig(op.codec);
    if (op.codec.algorithm == CompressedAlgorithm::SparseAllGather &&
        op.collective == Collective::ReduceScatter) {
      raise(ErrorCode::InvalidArgument,
            "{}: the sparse all-gather algorithm is for allreduce, not reducescatter", name);
    }
  }
  if (op.feedback != nullptr) {
    // Checked here, before any rank communicates, so a wrong size cannot strand peers.
    const size_t expected = op.collective == Collective::ReduceScatter
                                ? op.count * static_cast<size_t>(comm.nranks)
                                : op.count;
    if (op.collective == Collective::AllGather) {
      raise(ErrorCode::InvalidArgument, "{}: error feedback applies to reductions only", name);
    }
    if (op.codec.kind == CodecKind::None) {
      raise(ErrorCode::InvalidArgument, "{}: error feedback given without a compression kind",
            name);
    }
    if (op.feedback->size() != expected) {
      raise(ErrorCode::InvalidArgument,
            "{}: error feedback holds {} elements but this call's input has {}", name,
            op.feedback->size(), expected);
    }
  }
  const size_t es = dataTypeSize(op.type);
  // The largest buffer any collective touches is nranks * count elements
  // (checked by multiplying: two divisions cost more than the rest of the check).
  if (size_t largest = 0;
      __builtin_mul_overflow(op.count, es * static_cast<size_t>(comm.nranks), &largest)) {
    raise(ErrorCode::InvalidArgument, "{}: count {} x {} bytes x {} ranks overflows size_t", name,
          op.count, es, comm.nranks);
  }
  const size_t inBytes =
      inputElements(op.collective, op.count, comm.nranks, comm.rank, op.root) * es;
  const size_t outBytes =
      outputElements(op.collective, op.count, comm.nranks, comm.rank, op.root) * es;
  if (inBytes > 0 && op.send == nullptr) {
    raise(ErrorCode::InvalidArgument, "{}: sendbuff is NULL with count {}", name, op.count);
  }
  if (outBytes > 0 && op.recv == nullptr) {
    raise(ErrorCode::InvalidArgument, "{}: recvbuff is NULL with count {}", name, op.count);
  }
  // Partial overlap is never meaningful; exact in-place layouts are allowed.
  if (overlaps(op.send, inBytes, op.recv, outBytes)) {
    if (!isInPlace(comm, op)) {
      raise(ErrorCode::InvalidArgument,
            "{}: sendbuff {} ({} bytes) and recvbuff {} ({} bytes) overlap without being the "
            "in-place layout",
            name, op.send, inBytes, op.recv, outBytes);
    }
  }
  // Device buffers need a device; host and device in one call never work.
  const device::BufferPlacement placement = device::checkBufferLocations(
      name, inBytes > 0 ? op.send : nullptr, outBytes > 0 ? op.recv : nullptr, comm.driverWatch);
  op.onDevice = placement.onDevice;
  op.streamOrdered = placement.streamOrdered;
}

}  // namespace loom
