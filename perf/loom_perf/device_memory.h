// Device buffers for loom_perf --device (CUDA builds only).
#pragma once

#include <string>

#include "../common/runner.h"

namespace perf {

/// The CUDA runtime's allocator and copies, or nullptr with `*why` set when
/// this build has no CUDA or the machine has no device.
const DeviceMemory* cudaDeviceMemory(std::string* why);

}  // namespace perf
