// Memory: allocation, buffer registration and symmetric windows. Under the
// host-buffer extension these are host memory and bookkeeping-free no-ops;
// windows need GPU memory and are refused.
#include <cstdlib>

#include "comm.h"
#include "profiling_alias.h"
#include "status.h"

using loom_nccl::fail;
using loom_nccl::guarded;
using loom_nccl::readyComm;
using loom_nccl::requireOut;

namespace {

/// Page-aligned like NCCL's allocations, which windows require.
constexpr size_t kAlignment = NCCL_WIN_REQUIRED_ALIGNMENT;

}  // namespace

extern "C" {

/// Host memory until Loom's CUDA path exists (docs/nccl-compat.md).
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guarded("ncclMemAlloc", [&] {
    requireOut(ptr, "ptr");
    void* memory = nullptr;
    // A zero-byte request still gets a distinct pointer, which ncclMemFree takes back.
    const size_t bytes = size == 0 ? 1 : size;
    if (posix_memalign(&memory, kAlignment, bytes) != 0) {
      fail(ncclSystemError, "cannot allocate {} bytes of host memory", size);
    }
    *ptr = memory;
  });
}

ncclResult_t ncclMemFree(void* ptr) {
  return guarded("ncclMemFree", [&] { std::free(ptr); });
}

/// Loom needs no registration for host buffers; the handle is the buffer itself.
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("ncclCommRegister", [&] {
    requireOut(handle, "handle");
    readyComm(comm);
    *handle = buff;
  });
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guarded("ncclCommDeregister", [&] { readyComm(comm); });
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  return guarded("ncclCommWindowRegister", [&] {
    fail(ncclInvalidUsage,
         "symmetric memory windows need GPU memory and Loom's CUDA path, which does not exist "
         "yet");
  });
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return guarded("ncclCommWindowDeregister", [&] {
    fail(ncclInvalidUsage, "no window can exist: ncclCommWindowRegister is not supported by Loom");
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclMemAlloc)
LOOM_NCCL_PROFILING_ALIAS(ncclMemFree)
LOOM_NCCL_PROFILING_ALIAS(ncclCommRegister)
LOOM_NCCL_PROFILING_ALIAS(ncclCommDeregister)
LOOM_NCCL_PROFILING_ALIAS(ncclCommWindowRegister)
LOOM_NCCL_PROFILING_ALIAS(ncclCommWindowDeregister)
