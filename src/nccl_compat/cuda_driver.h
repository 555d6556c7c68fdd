// The few questions the shim asks the CUDA driver. It asks only when this
// process has already loaded the driver: a process that never touched CUDA has
// no device memory and no current device, and a machine without a GPU or driver
// then needs neither.
#pragma once

namespace loom_nccl {

/// Whether `ptr` is CUDA device memory that the host cannot read (managed and
/// pinned host memory are readable, so they are not).
bool isDeviceMemory(const void* ptr);

/// The device of the calling thread's current CUDA context, or 0 if there is none.
int currentCudaDevice();

}  // namespace loom_nccl
