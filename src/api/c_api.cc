// The C boundary: every entry point catches loom::Error (and anything else),
// records the message for loomGetLastError and returns a loomResult_t.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "api/group.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/launch_env.h"
#include "comm/comm.h"
#include "comm/operation.h"
#include "core/log.h"
#include "device/cuda_runtime.h"
#include "device_paths/device_walk.h"
#include "loom/loom.h"
#include "transports/shm/shared_buffer.h"

namespace {

using loom::Collective;
using loom::ErrorCode;

std::string& lastError() {
  thread_local std::string message;
  return message;
}

loomResult_t toResult(ErrorCode code) { return static_cast<loomResult_t>(code); }

/// Runs `body`, turning exceptions into result codes. The first place that
/// sees an error logs it (at INFO: bad arguments are the caller's business).
template <typename Body>
loomResult_t guarded(const char* function, Body&& body) {
  try {
    body();
    return loomSuccess;
  } catch (const loom::Error& e) {
    lastError() = std::string(function) + ": " + e.what();
    LOOM_INFO("{}", lastError());
    return toResult(e.code());
  } catch (const std::bad_alloc&) {
    lastError() = std::string(function) + ": out of memory";
    return loomSystemError;
  } catch (const std::exception& e) {
    lastError() = std::string(function) + ": internal error: " + e.what();
    LOOM_WARN("{}", lastError());
    return loomInternalError;
  }
}

template <typename T>
void requireOut(T* p, const char* name) {
  if (p == nullptr) loom::raise(ErrorCode::InvalidArgument, "{} is NULL", name);
}

/// Whether the communicator's default codec (LOOM_COMPRESS) applies: float data
/// and, for reductions, sum or avg; plain calls only for the gradient
/// reductions, Ex calls (with a NULL compression) for all-gather too.
bool usesDefaultCodec(const loom::Operation& op, bool explicitCall) {
  const bool floatType = op.type == loom::DataType::Float32 || op.type == loom::DataType::Float16 ||
                         op.type == loom::DataType::Bfloat16;
  const bool sumLike = op.op == loom::ReduceOp::Sum || op.op == loom::ReduceOp::Avg;
  if (op.collective == Collective::AllGather) return explicitCall && floatType;
  return floatType && sumLike &&
         (op.collective == Collective::AllReduce || op.collective == Collective::ReduceScatter);
}

}  // namespace

/// The C handle of an ErrorFeedback.
struct loomErrorFeedback {
  explicit loomErrorFeedback(size_t n) : impl(n) {}
  loom::ErrorFeedback impl;
};

namespace {

loom::CodecConfig codecFrom(const loomCompression& c) {
  loom::CodecConfig config;
  // Read as an int: a C caller may store any int in the enum field, and in C++
  // loading an out-of-range enum value is undefined (UBSan flags it).
  int kind = 0;
  static_assert(sizeof(kind) == sizeof(c.kind));
  std::memcpy(&kind, &c.kind, sizeof(kind));
  switch (kind) {
    case loomCompressNone:
      config.kind = loom::CodecKind::None;
      break;
    case loomCompressInt8:
      config.kind = loom::CodecKind::Int8;
      break;
    case loomCompressTopK:
      config.kind = loom::CodecKind::Topk;
      break;
    default:
      loom::raise(ErrorCode::InvalidArgument, "compression kind {} is not a loomCompressionKind_t",
                  kind);
  }
  if (c.block < 0) loom::raise(ErrorCode::InvalidArgument, "compression block {} < 0", c.block);
  if (c.block > 0) config.block = static_cast<uint32_t>(c.block);
  if (c.ratio != 0) config.ratio = c.ratio;
  config.seed = c.seed;
  config.stochastic = c.stochastic != 0;
  if (c.algorithm < loomCompressAlgoAuto || c.algorithm > loomCompressAlgoSparseAllGather) {
    loom::raise(ErrorCode::InvalidArgument,
                "compression algorithm {} is not a loomCompressionAlgorithm_t", c.algorithm);
  }
  config.algorithm = static_cast<loom::CompressedAlgorithm>(c.algorithm);
  loom::validateCodecConfig(config);
  return config;
}

/// `compression` NULL: the comm's default for plain gradient reductions.
/// `explicitCall`: the Ex entry points, where NULL also means the default.
/// `op` by reference: a copy of the freshly built operation reads its fields
/// back wider than they were written, which stalls store forwarding (about a
/// tenth of an 8-byte all-reduce's host time).
loomResult_t submit(const char* function, loomComm_t handle, loom::Operation&& op,
                    const loomCompression* compression = nullptr, bool explicitCall = false) {
  return guarded(function, [&] {
    loom::Comm& comm = loom::checkedComm(handle);
    // Counted in before anything else (validation may block, on the loader's
    // lock for one): an abort from another thread then waits for this call,
    // which finds the abort, instead of freeing the communicator under it.
    // A revoked or aborted communicator refuses the call here, buffers untouched.
    const loom::ActiveCall active(comm);
    if (compression != nullptr) {
      op.codec = codecFrom(*compression);
      if (compression->feedback != nullptr) op.feedback = &compression->feedback->impl;
    } else if (usesDefaultCodec(op, explicitCall)) {
      op.codec = comm.config.defaultCodec;
    }
    loom::validateOperation(comm, op);
    if (loom::enqueueInGroup(comm, op)) return;
    loom::runOperations(comm, {&op, 1});
  });
}

/// A C caller may pass any int as an enum, and loading an out-of-range enum
/// value is undefined in C++: read the bits as the int they are.
template <typename Enum>
int callerInt(Enum value) {
  int result = 0;
  static_assert(sizeof(result) == sizeof(value));
  std::memcpy(&result, &value, sizeof(result));
  return result;
}

loom::Operation makeOp(Collective c, const void* send, void* recv, size_t count,
                       loomDataType_t type, loomRedOp_t op, int root, loomStream_t stream) {
  loom::Operation o;
  o.collective = c;
  o.send = send;
  o.recv = recv;
  o.count = count;
  // Kept whole for validation; the 8-bit fields are set only from valid values.
  const int typeValue = callerInt(type);
  const int opValue = callerInt(op);
  o.callerType = typeValue;
  o.callerOp = opValue;
  if (typeValue >= 0 && typeValue < loomNumTypes) o.type = static_cast<loom::DataType>(typeValue);
  if (opValue >= 0 && opValue < loomNumOps) o.op = static_cast<loom::ReduceOp>(opValue);
  o.root = root;
  o.stream = stream;
  return o;
}

}  // namespace

extern "C" {

size_t loomTypeSize(loomDataType_t type) {
  const int value = callerInt(type);
  if (value < 0 || value >= loomNumTypes) return 0;
  return loom::dataTypeSize(static_cast<loom::DataType>(value));
}

loomResult_t loomGetVersion(int* version) {
  return guarded("loomGetVersion", [&] {
    requireOut(version, "version");
    *version = LOOM_VERSION_CODE;
  });
}

const char* loomGetErrorString(loomResult_t result) {
  switch (result) {
    case loomSuccess:
      return "no error";
    case loomUnhandledCudaError:
      return "unhandled CUDA error";
    case loomSystemError:
      return "system error (a system call failed or memory ran out)";
    case loomInternalError:
      return "internal error (a bug in Loom)";
    case loomInvalidArgument:
      return "invalid argument";
    case loomInvalidUsage:
      return "invalid usage (calls inconsistent across ranks or out of order)";
    case loomRemoteError:
      return "remote error (a peer died, stalled or disconnected)";
    case loomInProgress:
      return "operation in progress";
    case loomAborted:
      return "communicator aborted";
    case loomRevoked:
      return "communicator revoked (loomCommRevoke on some rank)";
    default:
      return "unknown loomResult_t";
  }
}

const char* loomGetLastError(loomComm_t) { return lastError().c_str(); }

loomResult_t loomGetUniqueId(loomUniqueId* id) {
  return guarded("loomGetUniqueId", [&] {
    requireOut(id, "id");
    *id = loom::startRendezvous().serialize();
  });
}

loomResult_t loomGetLocalUniqueId(loomUniqueId* id) {
  return guarded("loomGetLocalUniqueId", [&] {
    requireOut(id, "id");
    loom::RendezvousOptions options;
    options.bindHost = "127.0.0.1";
    *id = loom::startRendezvous(options).serialize();
  });
}

namespace {

void initRank(loomComm_t* comm, int nranks, const loomUniqueId& id, int rank,
              const loom::CommOverrides& overrides) {
  requireOut(comm, "comm");
  if (nranks < 1) loom::raise(ErrorCode::InvalidArgument, "nranks={} must be >= 1", nranks);
  if (rank < 0 || rank >= nranks) {
    loom::raise(ErrorCode::InvalidArgument, "rank={} is outside [0, nranks={})", rank, nranks);
  }
  const loom::UniqueId parsed = loom::UniqueId::deserialize(id);
  *comm = loom::initComm(parsed, nranks, rank, overrides).release();
}

/// What a caller's loomCommConfig asks for; checked before anything starts.
loom::CommOverrides overridesOf(const loomCommConfig* config) {
  loom::CommOverrides overrides;
  if (config == nullptr) return overrides;
  const size_t needed = offsetof(loomCommConfig, timeoutMs) + sizeof(config->timeoutMs);
  if (config->size < needed) {
    loom::raise(ErrorCode::InvalidArgument,
                "config->size={} is smaller than this library's loomCommConfig fields ({} bytes): "
                "start from LOOM_COMM_CONFIG_INITIALIZER",
                config->size, needed);
  }
  if (config->timeoutMs < 0) {
    loom::raise(ErrorCode::InvalidArgument, "config->timeoutMs={} is negative (0: LOOM_TIMEOUT)",
                config->timeoutMs);
  }
  if (config->timeoutMs > 0) overrides.timeout = std::chrono::milliseconds(config->timeoutMs);
  return overrides;
}

}  // namespace

loomResult_t loomCommInitRank(loomComm_t* comm, int nranks, loomUniqueId id, int rank) {
  return guarded("loomCommInitRank", [&] { initRank(comm, nranks, id, rank, {}); });
}

loomResult_t loomCommInitRankConfig(loomComm_t* comm, int nranks, loomUniqueId id, int rank,
                                    const loomCommConfig* config) {
  return guarded("loomCommInitRankConfig",
                 [&] { initRank(comm, nranks, id, rank, overridesOf(config)); });
}

loomResult_t loomCommInitAll(loomComm_t* comms, int ndev, const int* devlist) {
  return guarded("loomCommInitAll", [&] {
    requireOut(comms, "comms");
    if (ndev < 1) loom::raise(ErrorCode::InvalidArgument, "ndev={} must be >= 1", ndev);
    // Where the application uses CUDA, each rank's creation runs on its
    // device: devlist's, or the caller's current one (the init threads are new,
    // and a thread's current device is its own). The device path makes its
    // FIFOs there. Elsewhere devices mean nothing, and a process without CUDA
    // never loads it to find out.
    const bool placeOnDevices =
        loom::device::cudaDriverLoaded() && loom::device::deviceRuntime().available;
    int current = 0;
    if (placeOnDevices && devlist == nullptr) {
      const loom::device::DeviceRuntime& rt = loom::device::deviceRuntime();
      rt.check(rt.getDevice(&current), "cudaGetDevice");
    }
    for (int r = 0; placeOnDevices && devlist != nullptr && r < ndev; ++r) {
      const int count = loom::device::deviceRuntime().deviceCount;
      if (devlist[r] < 0 || devlist[r] >= count) {
        loom::raise(ErrorCode::InvalidArgument, "devlist[{}]={} is not a CUDA device (0..{})", r,
                    devlist[r], count - 1);
      }
    }
    loom::RendezvousOptions options;
    options.bindHost = "127.0.0.1";  // every rank is in this process
    const loom::UniqueId id = loom::startRendezvous(options);
    std::vector<std::unique_ptr<loom::Comm>> made(static_cast<size_t>(ndev));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(ndev));
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(ndev));
    for (int r = 0; r < ndev; ++r) {
      threads.emplace_back([&, r] {
        try {
          if (placeOnDevices) {
            // This thread ends with the creation: no device to restore.
            const loom::device::DeviceRuntime& rt = loom::device::deviceRuntime();
            rt.check(rt.setDevice(devlist != nullptr ? devlist[r] : current), "cudaSetDevice");
          }
          made[r] = loom::initComm(id, ndev, r);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (int r = 0; r < ndev; ++r) comms[r] = made[r].release();
  });
}

loomResult_t loomCommInitFromEnv(loomComm_t* comm) {
  return guarded("loomCommInitFromEnv", [&] {
    requireOut(comm, "comm");
    const loom::LaunchEnv env = loom::detectLaunchEnv();
    const loom::UniqueId id = loom::resolveUniqueId(env);
    LOOM_INFO("launched by {}: rank {} of {}", env.launcher, env.rank, env.worldSize);
    *comm = loom::initComm(id, env.worldSize, env.rank).release();
  });
}

loomResult_t loomCommSplit(loomComm_t comm, int color, int key, loomComm_t* newcomm) {
  return guarded("loomCommSplit", [&] {
    requireOut(newcomm, "newcomm");
    loom::Comm& parent = loom::checkedComm(comm);
    // A revoked communicator may still be split (NCCL allows it): the
    // bootstrap it uses is not revoked.
    const loom::ActiveCall active(parent, loom::ActiveCall::Revoked::Allowed);
    *newcomm = loom::splitComm(parent, color, key).release();
  });
}

loomResult_t loomCommShrink(loomComm_t comm, const int* excludeRanks, int excludeCount,
                            loomComm_t* newcomm, int flags) {
  return guarded("loomCommShrink", [&] {
    requireOut(newcomm, "newcomm");
    loom::Comm& parent = loom::checkedComm(comm);
    if (excludeCount < 0 || (excludeCount > 0 && excludeRanks == nullptr)) {
      loom::raise(ErrorCode::InvalidArgument, "excludeRanks={} with excludeCount={}",
                  static_cast<const void*>(excludeRanks), excludeCount);
    }
    // Shrinking is what a revoked communicator is for.
    const loom::ActiveCall active(parent, loom::ActiveCall::Revoked::Allowed);
    *newcomm = loom::shrinkComm(parent, {excludeRanks, static_cast<size_t>(excludeCount)}, flags)
                   .release();
  });
}

loomResult_t loomCommGetUniqueId(loomComm_t comm, loomUniqueId* id) {
  return guarded("loomCommGetUniqueId", [&] {
    requireOut(id, "id");
    loom::Comm& member = loom::checkedComm(comm);
    const loom::ActiveCall active(member);
    *id = loom::startGrowRendezvous(member).serialize();
  });
}

loomResult_t loomCommGrow(loomComm_t comm, int nranks, const loomUniqueId* id, int rank,
                          loomComm_t* newcomm) {
  return guarded("loomCommGrow", [&] {
    requireOut(newcomm, "newcomm");
    if (comm == nullptr) {
      // A new rank: it knows the grown communicator only by the id.
      if (id == nullptr) {
        loom::raise(ErrorCode::InvalidArgument,
                    "a new rank (comm NULL) needs the id from loomCommGetUniqueId");
      }
      *newcomm = loom::joinGrownComm(loom::UniqueId::deserialize(*id), nranks, rank).release();
      return;
    }
    loom::Comm& parent = loom::checkedComm(comm);
    const loom::ActiveCall active(parent);
    *newcomm = loom::growComm(parent, nranks).release();
  });
}

loomResult_t loomCommDestroy(loomComm_t comm) {
  return guarded("loomCommDestroy", [&] {
    loom::Comm& c = loom::checkedComm(comm);
    c.magic = 0;
    delete &c;
  });
}

namespace {

/// Marks `c` aborted and wakes its waits: calls in progress return loomAborted
/// within one sleep period, later ones at once. Peers are not told.
void abortHere(loom::Comm& c) {
  c.aborted.store(true);
  c.leaveCleanly = false;
  loom::abortDeviceWalks(c);  // kernels still waiting on peers give up
  if (c.shm) c.shm->myDoorbell().ring();
}

}  // namespace

loomResult_t loomCommRevoke(loomComm_t comm) {
  return guarded("loomCommRevoke", [&] { loom::revokeComm(loom::checkedComm(comm)); });
}

loomResult_t loomCommAbort(loomComm_t comm) {
  return guarded("loomCommAbort", [&] {
    loom::Comm& c = loom::checkedComm(comm);
    abortHere(c);
    // Waits notice the flag within one sleep period (10 ms); bound it anyway.
    const auto deadline = loom::Deadline::after(std::chrono::seconds(10));
    while (c.activeCalls.load() > 0 && !deadline.expired()) {
      if (c.shm) c.shm->myDoorbell().ring();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (c.activeCalls.load() > 0) {
      loom::raise(ErrorCode::InternalError,
                  "a call on the aborted communicator did not return within 10 s; not freeing it");
    }
    c.magic = 0;
    delete &c;
  });
}

loomResult_t loomCommGetAsyncError(loomComm_t comm, loomResult_t* asyncError) {
  return guarded("loomCommGetAsyncError", [&] {
    requireOut(asyncError, "asyncError");
    loom::Comm& c = loom::checkedComm(comm);
    loom::pollDeviceWalk(c);  // a kernel that failed since the last call
    if (c.aborted.load()) {
      *asyncError = loomAborted;
    } else if (c.revokedBy->load() != 0) {
      // Revoked: in progress until every call of this rank has returned.
      *asyncError = c.activeCalls.load() > 0 ? loomInProgress : loomRevoked;
    } else {
      *asyncError = static_cast<loomResult_t>(c.asyncError.load());
    }
  });
}

loomResult_t loomCommCount(const loomComm_t comm, int* count) {
  return guarded("loomCommCount", [&] {
    requireOut(count, "count");
    *count = loom::checkedComm(comm).nranks;
  });
}

loomResult_t loomCommGetStats(const loomComm_t comm, loomCommStats* stats) {
  return guarded("loomCommGetStats", [&] {
    requireOut(stats, "stats");
    const loom::CommStats& s = loom::checkedComm(comm).stats;
    loomCommStats out{};
    out.calls = s.calls.load(std::memory_order_relaxed);
    out.bytesSent = s.bytesSent.load(std::memory_order_relaxed);
    out.lastCallBytesSent = s.lastCallBytesSent.load(std::memory_order_relaxed);
    out.compressedCalls = s.compressedCalls.load(std::memory_order_relaxed);
    out.compressedInputBytes = s.compressedInputBytes.load(std::memory_order_relaxed);
    out.agreements = s.agreements.load(std::memory_order_relaxed);
    *stats = out;
  });
}

loomResult_t loomCommUserRank(const loomComm_t comm, int* rank) {
  return guarded("loomCommUserRank", [&] {
    requireOut(rank, "rank");
    *rank = loom::checkedComm(comm).rank;
  });
}

loomResult_t loomMemAlloc(void** ptr, size_t size) {
  return guarded("loomMemAlloc", [&] {
    requireOut(ptr, "ptr");
    *ptr = loom::allocateSharedBuffer(size);
  });
}

loomResult_t loomMemFree(void* ptr) {
  return guarded("loomMemFree", [&] {
    if (ptr != nullptr) loom::freeSharedBuffer(ptr);
  });
}

loomResult_t loomCommRegister(const loomComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("loomCommRegister", [&] {
    requireOut(handle, "handle");
    loom::Comm& c = loom::checkedComm(comm);
    if (buff == nullptr && size > 0) {
      loom::raise(ErrorCode::InvalidArgument, "buff is NULL with size {}", size);
    }
    *handle = c.registry.add(buff, size);
  });
}

loomResult_t loomCommDeregister(const loomComm_t comm, void* handle) {
  return guarded("loomCommDeregister", [&] { loom::checkedComm(comm).registry.remove(handle); });
}

loomResult_t loomAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           loomDataType_t datatype, loomRedOp_t op, loomComm_t comm,
                           loomStream_t stream) {
  return submit("loomAllReduce", comm,
                makeOp(Collective::AllReduce, sendbuff, recvbuff, count, datatype, op, 0, stream));
}

loomResult_t loomErrorFeedbackCreate(loomErrorFeedback_t* feedback, size_t count) {
  return guarded("loomErrorFeedbackCreate", [&] {
    requireOut(feedback, "feedback");
    *feedback = new loomErrorFeedback(count);
  });
}

loomResult_t loomErrorFeedbackReset(loomErrorFeedback_t feedback) {
  return guarded("loomErrorFeedbackReset", [&] {
    requireOut(feedback, "feedback");
    feedback->impl.reset();
  });
}

loomResult_t loomErrorFeedbackGet(loomErrorFeedback_t feedback, float* residual, size_t count) {
  return guarded("loomErrorFeedbackGet", [&] {
    requireOut(feedback, "feedback");
    if (count != feedback->impl.size()) {
      loom::raise(ErrorCode::InvalidArgument, "count {} but the residual holds {} elements", count,
                  feedback->impl.size());
    }
    if (count > 0) requireOut(residual, "residual");
    const auto r = feedback->impl.residual();
    std::copy(r.begin(), r.end(), residual);
  });
}

loomResult_t loomErrorFeedbackDestroy(loomErrorFeedback_t feedback) {
  return guarded("loomErrorFeedbackDestroy", [&] { delete feedback; });
}

loomResult_t loomAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                             loomDataType_t datatype, loomRedOp_t op,
                             const loomCompression* compression, loomComm_t comm,
                             loomStream_t stream) {
  return submit("loomAllReduceEx", comm,
                makeOp(Collective::AllReduce, sendbuff, recvbuff, count, datatype, op, 0, stream),
                compression, true);
}

loomResult_t loomReduceScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 loomDataType_t datatype, loomRedOp_t op,
                                 const loomCompression* compression, loomComm_t comm,
                                 loomStream_t stream) {
  return submit(
      "loomReduceScatterEx", comm,
      makeOp(Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, stream),
      compression, true);
}

loomResult_t loomAllGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                             loomDataType_t datatype, const loomCompression* compression,
                             loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomAllGatherEx", comm,
      makeOp(Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, loomSum, 0, stream),
      compression, true);
}

loomResult_t loomAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           loomDataType_t datatype, loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomAllGather", comm,
      makeOp(Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, loomSum, 0, stream));
}

loomResult_t loomReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               loomDataType_t datatype, loomRedOp_t op, loomComm_t comm,
                               loomStream_t stream) {
  return submit(
      "loomReduceScatter", comm,
      makeOp(Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, stream));
}

loomResult_t loomBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           loomDataType_t datatype, int root, loomComm_t comm,
                           loomStream_t stream) {
  return submit(
      "loomBroadcast", comm,
      makeOp(Collective::Broadcast, sendbuff, recvbuff, count, datatype, loomSum, root, stream));
}

loomResult_t loomReduce(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype,
                        loomRedOp_t op, int root, loomComm_t comm, loomStream_t stream) {
  return submit("loomReduce", comm,
                makeOp(Collective::Reduce, sendbuff, recvbuff, count, datatype, op, root, stream));
}

loomResult_t loomAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          loomDataType_t datatype, loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomAllToAll", comm,
      makeOp(Collective::AllToAll, sendbuff, recvbuff, count, datatype, loomSum, 0, stream));
}

loomResult_t loomGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomGather", comm,
      makeOp(Collective::Gather, sendbuff, recvbuff, sendcount, datatype, loomSum, root, stream));
}

loomResult_t loomScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                         loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomScatter", comm,
      makeOp(Collective::Scatter, sendbuff, recvbuff, recvcount, datatype, loomSum, root, stream));
}

loomResult_t loomSend(const void* sendbuff, size_t count, loomDataType_t datatype, int peer,
                      loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomSend", comm,
      makeOp(Collective::Send, sendbuff, nullptr, count, datatype, loomSum, peer, stream));
}

loomResult_t loomRecv(void* recvbuff, size_t count, loomDataType_t datatype, int peer,
                      loomComm_t comm, loomStream_t stream) {
  return submit(
      "loomRecv", comm,
      makeOp(Collective::Recv, nullptr, recvbuff, count, datatype, loomSum, peer, stream));
}

loomResult_t loomGroupStart(void) {
  return guarded("loomGroupStart", [] { loom::groupStart(); });
}

loomResult_t loomGroupEnd(void) {
  return guarded("loomGroupEnd", [] { loom::groupEnd(); });
}

}  // extern "C"
