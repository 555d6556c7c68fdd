// Resident memory of this process, for the soak's leak check.
#ifndef LOOM_PERF_SOAK_RSS_H_
#define LOOM_PERF_SOAK_RSS_H_

#include <cstdint>

namespace soak {

/// VmRSS from /proc/self/status in bytes, or -1 where it cannot be read.
int64_t residentBytes();

}  // namespace soak

#endif  // LOOM_PERF_SOAK_RSS_H_
