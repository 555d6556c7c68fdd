// ncclSend/ncclRecv. Pairs that must progress together go in one group, as in NCCL.
#include "loom_call.h"
#include "profiling_alias.h"
#include "status.h"

using loom_nccl::finish;
using loom_nccl::guarded;
using loom_nccl::LoomCall;
using loom_nccl::prepareTransfer;

extern "C" {

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclSend", [&] {
    LoomCall c = prepareTransfer(comm, datatype, sendbuff, nullptr);
    finish(c, loomSend(sendbuff, count, c.type, peer, c.comm, stream));
  });
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return guarded("ncclRecv", [&] {
    LoomCall c = prepareTransfer(comm, datatype, nullptr, recvbuff);
    finish(c, loomRecv(recvbuff, count, c.type, peer, c.comm, stream));
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclSend)
LOOM_NCCL_PROFILING_ALIAS(ncclRecv)
