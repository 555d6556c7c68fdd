// The collectives, each a Loom call of the same name and argument order. The
// stream is handed on: Loom ignores it for host buffers (the shim's extension)
// and orders device-buffer calls on it (docs/cuda.md).
#include "loom_call.h"
#include "profiling_alias.h"
#include "status.h"

using loom_nccl::finish;
using loom_nccl::guarded;
using loom_nccl::Input;
using loom_nccl::LoomCall;
using loom_nccl::prepareReduction;
using loom_nccl::prepareTransfer;

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return guarded("ncclAllReduce", [&] {
    LoomCall c = prepareReduction(comm, datatype, op, sendbuff, recvbuff, count, Input::Count);
    finish(c, loomAllReduce(c.send, recvbuff, count, c.type, c.op, c.comm, stream));
  });
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclReduce", [&] {
    LoomCall c = prepareReduction(comm, datatype, op, sendbuff, recvbuff, count, Input::Count);
    finish(c, loomReduce(c.send, recvbuff, count, c.type, c.op, root, c.comm, stream));
  });
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return guarded("ncclReduceScatter", [&] {
    LoomCall c =
        prepareReduction(comm, datatype, op, sendbuff, recvbuff, recvcount, Input::CountPerRank);
    finish(c, loomReduceScatter(c.send, recvbuff, recvcount, c.type, c.op, c.comm, stream));
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return guarded("ncclBroadcast", [&] {
    LoomCall c = prepareTransfer(comm, datatype, sendbuff, recvbuff);
    finish(c, loomBroadcast(c.send, recvbuff, count, c.type, root, c.comm, stream));
  });
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return guarded("ncclBcast", [&] {
    LoomCall c = prepareTransfer(comm, datatype, buff, buff);
    finish(c, loomBroadcast(buff, buff, count, c.type, root, c.comm, stream));
  });
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclAllGather", [&] {
    LoomCall c = prepareTransfer(comm, datatype, sendbuff, recvbuff);
    finish(c, loomAllGather(c.send, recvbuff, sendcount, c.type, c.comm, stream));
  });
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclAlltoAll", [&] {
    LoomCall c = prepareTransfer(comm, datatype, sendbuff, recvbuff);
    finish(c, loomAllToAll(c.send, recvbuff, count, c.type, c.comm, stream));
  });
}

ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclGather", [&] {
    LoomCall c = prepareTransfer(comm, datatype, sendbuff, recvbuff);
    finish(c, loomGather(c.send, recvbuff, count, c.type, root, c.comm, stream));
  });
}

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclScatter", [&] {
    LoomCall c = prepareTransfer(comm, datatype, sendbuff, recvbuff);
    finish(c, loomScatter(c.send, recvbuff, count, c.type, root, c.comm, stream));
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclAllReduce)
LOOM_NCCL_PROFILING_ALIAS(ncclReduce)
LOOM_NCCL_PROFILING_ALIAS(ncclReduceScatter)
LOOM_NCCL_PROFILING_ALIAS(ncclBroadcast)
LOOM_NCCL_PROFILING_ALIAS(ncclBcast)
LOOM_NCCL_PROFILING_ALIAS(ncclAllGather)
LOOM_NCCL_PROFILING_ALIAS(ncclAlltoAll)
LOOM_NCCL_PROFILING_ALIAS(ncclGather)
LOOM_NCCL_PROFILING_ALIAS(ncclScatter)
