#include "loom_call.h"

#include <cstdint>

#include "comm.h"
#include "cuda_driver.h"
#include "group.h"
#include "scale.h"
#include "status.h"
#include "types.h"

namespace loom_nccl {
LoomCall prepareTransfer(ncclComm_t comm, const ncclDataType_t& type, const void* send,
                         const void* recv) {
  LoomCall call;
  call.comm = readyComm(comm).loom;
  call.type = toLoomType(type);
  call.send = send;
  // Device buffers go to Loom as they are: it stages them (docs/cuda.md).
  (void)recv;
  return call;
}

LoomCall prepareReduction(ncclComm_t comm, const ncclDataType_t& type, const ncclRedOp_t& op,
                          const void* send, const void* recv, size_t count, Input input) {
  LoomCall call = prepareTransfer(comm, type, send, recv);
  if (enumValue(op) < ncclNumOps) {
    call.op = toLoomOp(op);
    return call;
  }
  const PreMulSum preMul = comm->ops.find(op);
  if (preMul.type != call.type) {
    fail(ncclInvalidArgument, "op {} was created for {}, but this call passes {}", enumValue(op),
         typeName(preMul.type), typeName(call.type));
  }
  int nranks = 1;
  if (input == Input::CountPerRank) check(loomCommCount(call.comm, &nranks));
  const size_t elementBytes = loomTypeSize(call.type);
  if (count > SIZE_MAX / elementBytes / static_cast<size_t>(nranks)) {
    fail(ncclInvalidArgument, "count {} x {} ranks x {} bytes overflows size_t", count, nranks,
         elementBytes);
  }
  const size_t inputCount = count * static_cast<size_t>(nranks);
  // The scaled copy is made by the host, which cannot read device memory.
  if (inputCount > 0 && isDeviceMemory(send)) {
    fail(ncclInvalidUsage,
         "op {} (ncclRedOpCreatePreMulSum) on a device sendbuff {}: the shim scales inputs on the "
         "host and has no device kernel for it yet (docs/nccl-compat.md)",
         enumValue(op), send);
  }
  if (inputCount > 0 && send == nullptr) {
    fail(ncclInvalidArgument, "sendbuff is NULL with count {}", count);
  }
  call.scaledInput = scaledCopy(send, inputCount, call.type, preMul.scalar());
  if (call.scaledInput) call.send = call.scaledInput.get();
  call.op = loomSum;
  return call;
}

void finish(LoomCall& call, loomResult_t result) {
  check(result);
  group::keepUntilGroupEnd(std::move(call.scaledInput));
}

}  // namespace loom_nccl
