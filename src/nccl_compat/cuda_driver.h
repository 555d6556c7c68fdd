// The few questions the shim asks the CUDA driver. It asks only when this
// process has already loaded the driver: a process that never touched CUDA has
// no device memory and no current device, and a machine without a GPU or driver
// then needs neither.
#pragma once

#include <cstddef>

namespace loom_nccl {

/// Whether `ptr` is CUDA device memory that the host cannot read (managed and
/// pinned host memory are readable, so they are not).
bool isDeviceMemory(const void* ptr);

/// The device of the calling thread's current CUDA context, or 0 if there is none.
int currentCudaDevice();

enum class DeviceAllocation {
  NoContext,  ///< no driver loaded, or CUDA never initialised: the caller uses host memory
  Failed,     ///< the driver refused (out of memory, no device)
  Done,
};
/// `bytes` of device memory in the calling thread's current context (device
/// 0's primary context on a thread with none, as the runtime would), as NCCL's
/// ncclMemAlloc gives (the driver's alignment: 256 B or more).
DeviceAllocation allocateOnCurrentDevice(size_t bytes, void** ptr);

enum class DeviceFree { NotDevice, Failed, Done };
/// Frees `ptr` when it is device memory that CUDA allocated; NotDevice,
/// touching nothing, for any other pointer.
DeviceFree freeDeviceMemory(void* ptr);

}  // namespace loom_nccl
