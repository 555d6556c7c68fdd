// What a communicator says about itself: size, this rank, CUDA device.
#include "comm.h"
#include "profiling_alias.h"
#include "status.h"

using loom_nccl::check;
using loom_nccl::guarded;
using loom_nccl::readyComm;
using loom_nccl::requireOut;

extern "C" {

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return guarded("ncclCommCount", [&] {
    requireOut(count, "count");
    check(loomCommCount(readyComm(comm).loom, count));
  });
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return guarded("ncclCommUserRank", [&] {
    requireOut(rank, "rank");
    check(loomCommUserRank(readyComm(comm).loom, rank));
  });
}

/// The CUDA device current when the communicator was created (ncclCommInitAll:
/// its devlist entry or its index), 0 when the process had no CUDA context.
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return guarded("ncclCommCuDevice", [&] {
    requireOut(device, "device");
    *device = readyComm(comm).device;
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclCommCount)
LOOM_NCCL_PROFILING_ALIAS(ncclCommUserRank)
LOOM_NCCL_PROFILING_ALIAS(ncclCommCuDevice)
