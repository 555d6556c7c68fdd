// Memory: allocation, buffer registration and symmetric windows. Allocations
// are device memory where the program uses CUDA and, under the host-buffer
// extension, host memory that other processes can map (loomMemAlloc);
// registration is loomCommRegister's, which lets large host calls read such
// buffers in place; windows (symmetric memory for NCCL's device API) are refused.
#include "comm.h"
#include "cuda_driver.h"
#include "profiling_alias.h"
#include "status.h"

using loom_nccl::check;
using loom_nccl::fail;
using loom_nccl::guarded;
using loom_nccl::readyComm;
using loom_nccl::requireOut;

extern "C" {

/// Device memory on the current device when the program uses CUDA (as NCCL
/// gives); otherwise loomMemAlloc's host memory, for the host-buffer extension.
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guarded("ncclMemAlloc", [&] {
    requireOut(ptr, "ptr");
    // A zero-byte request still gets a distinct pointer, which ncclMemFree takes back.
    const size_t bytes = size == 0 ? 1 : size;
    void* memory = nullptr;
    switch (loom_nccl::allocateOnCurrentDevice(bytes, &memory)) {
      case loom_nccl::DeviceAllocation::Done:
        *ptr = memory;
        return;
      case loom_nccl::DeviceAllocation::Failed:
        fail(ncclUnhandledCudaError, "cannot allocate {} bytes of device memory", size);
      case loom_nccl::DeviceAllocation::NoContext:
        break;
    }
    check(loomMemAlloc(&memory, size));
    *ptr = memory;
  });
}

ncclResult_t ncclMemFree(void* ptr) {
  return guarded("ncclMemFree", [&] {
    switch (loom_nccl::freeDeviceMemory(ptr)) {
      case loom_nccl::DeviceFree::Done:
        return;
      case loom_nccl::DeviceFree::Failed:
        fail(ncclUnhandledCudaError, "cuMemFree refused {} (not from ncclMemAlloc?)", ptr);
      case loom_nccl::DeviceFree::NotDevice:
        check(loomMemFree(ptr));
    }
  });
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("ncclCommRegister", [&] {
    requireOut(handle, "handle");
    check(loomCommRegister(readyComm(comm).loom, buff, size, handle));
  });
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guarded("ncclCommDeregister",
                 [&] { check(loomCommDeregister(readyComm(comm).loom, handle)); });
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  return guarded("ncclCommWindowRegister", [&] {
    fail(ncclInvalidUsage,
         "symmetric memory windows serve NCCL's device API (nccl_device.h), which Loom does not "
         "have: its collectives run in its own kernels");
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
