// Single-thread memcpy bandwidth: the ceiling a host collective's copies run into.
#ifndef LOOM_PERF_LOOM_PERF_MEMCPY_BW_H_
#define LOOM_PERF_LOOM_PERF_MEMCPY_BW_H_

namespace perf {

/// Measures memcpy of a 64 MiB buffer, prints the result and returns 0.
int runMemcpyBandwidth();

}  // namespace perf

#endif  // LOOM_PERF_LOOM_PERF_MEMCPY_BW_H_
