// ncclRedOpCreatePreMulSum / ncclRedOpDestroy.
#include "premul_sum.h"

#include <cstring>

#include "comm.h"
#include "cuda_driver.h"
#include "profiling_alias.h"
#include "status.h"
#include "types.h"

using loom_nccl::fail;
using loom_nccl::guarded;

extern "C" {

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  return guarded("ncclRedOpCreatePreMulSum", [&] {
    loom_nccl::requireOut(op, "op");
    loom_nccl::requireOut(scalar, "scalar");
    ncclComm& c = loom_nccl::readyComm(comm);
    loom_nccl::PreMulSum preMul;
    preMul.type = loom_nccl::toLoomType(datatype);
    switch (loom_nccl::enumValue(residence)) {
      case ncclScalarHostImmediate:
        std::memcpy(preMul.value.data(), scalar, loomTypeSize(preMul.type));
        break;
      case ncclScalarDevice:
        // NCCL reads it while the collective runs; the shim reads it when the
        // collective is called, from host memory.
        if (loom_nccl::isDeviceMemory(scalar)) {
          fail(ncclInvalidUsage,
               "scalar {} is CUDA device memory; Loom's NCCL shim reads scalars on the host until "
               "Loom's CUDA path exists",
               scalar);
        }
        preMul.source = scalar;
        break;
      default:
        fail(ncclInvalidArgument, "residence {} is not an ncclScalarResidence_t",
             loom_nccl::enumValue(residence));
    }
    *op = c.ops.add(preMul);
  });
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return guarded("ncclRedOpDestroy", [&] { loom_nccl::readyComm(comm).ops.remove(op); });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclRedOpCreatePreMulSum)
LOOM_NCCL_PROFILING_ALIAS(ncclRedOpDestroy)
