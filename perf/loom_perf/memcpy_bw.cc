#include "memcpy_bw.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace perf {

int runMemcpyBandwidth() {
  // 64 MiB is well past any last-level cache, so this is DRAM bandwidth, not cache.
  constexpr size_t kBytes = size_t{64} << 20;
  constexpr int kReps = 10;
  char* src = static_cast<char*>(std::aligned_alloc(4096, kBytes));
  char* dst = static_cast<char*>(std::aligned_alloc(4096, kBytes));
  if (!src || !dst) {
    std::fprintf(stderr, "loom_perf: out of memory for the memcpy buffers\n");
    return 1;
  }
  std::memset(src, 1, kBytes);  // fault every page in before timing
  std::memset(dst, 0, kBytes);
  std::memcpy(dst, src, kBytes);
  double best = 0;
  double total = 0;
  for (int i = 0; i < kReps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(dst, src, kBytes);
    // Tells the compiler dst is read afterwards, so the copy is not elided as dead.
    asm volatile("" : : "r"(dst) : "memory");
    const std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
    const double gbps = kBytes / s.count() / 1e9;
    best = std::max(best, gbps);
    total += gbps;
  }
  // Counted as bytes copied per second (each byte is read once and written once).
  std::printf("# memcpy 64 MiB, 1 thread, %d reps: best %.2f GB/s, mean %.2f GB/s\n", kReps, best,
              total / kReps);
  std::printf("memcpy_GBps %.3f\n", best);
  std::free(src);
  std::free(dst);
  return 0;
}

}  // namespace perf
