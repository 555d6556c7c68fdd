// Whether the process has loaded the CUDA driver, asked on every collective
// call without a system call.
#pragma once

#include <cstdint>

namespace loom::device {

/// Remembers whether libcuda.so.1 is loaded and asks the dynamic loader again
/// only when the loader has loaded or unloaded an object since the last answer
/// (glibc counts both; reading the counts takes its lock, no system call). The
/// direct question (`cudaDriverLoaded()`) searches the library path and costs
/// several failed `openat` calls when the driver is absent: about 20 µs, which
/// is 80 times an 8-byte all-reduce. One watch per communicator: a
/// communicator is used by one thread at a time.
class DriverWatch {
 public:
  bool loaded();

 private:
  uint64_t adds_ = 0;
  uint64_t subs_ = 0;
  bool known_ = false;
  bool loaded_ = false;
};

}  // namespace loom::device
