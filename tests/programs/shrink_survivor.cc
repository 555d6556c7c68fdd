// A rank program for loomrun --keep-going: every rank runs all-reduces, the
// last rank dies (SIGKILL) after a few, and the survivors shrink the world and
// check an all-reduce over the ranks that are left. Each survivor prints
// "shrink_survivor rank R: now rank r of n, sum S" and exits 0; any failure
// prints why and exits 1.
#include <loom/loom.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

int main() {
  loomComm_t world = nullptr;
  if (loomCommInitFromEnv(&world) != loomSuccess) {
    std::printf("shrink_survivor: init failed: %s\n", loomGetLastError(nullptr));
    return 1;
  }
  int rank = 0;
  int nranks = 0;
  loomCommUserRank(world, &rank);
  loomCommCount(world, &nranks);
  std::vector<float> v(1024, 1.0f);
  loomResult_t rc = loomSuccess;
  for (int i = 0; rc == loomSuccess && i < 100000; ++i) {
    if (i == 5 && rank == nranks - 1) ::kill(::getpid(), SIGKILL);
    rc = loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomMax, world, nullptr);
  }
  if (rc == loomSuccess) {
    std::printf("shrink_survivor rank %d: the last rank's death went unnoticed\n", rank);
    return 1;
  }
  loomComm_t survivors = nullptr;
  if (loomCommShrink(world, nullptr, 0, &survivors, LOOM_SHRINK_DEFAULT) != loomSuccess) {
    std::printf("shrink_survivor rank %d: shrink failed: %s\n", rank, loomGetLastError(world));
    return 1;
  }
  int newRank = -1;
  int newSize = 0;
  loomCommUserRank(survivors, &newRank);
  loomCommCount(survivors, &newSize);
  int sum = rank + 1;  // 1 + 2 + ... over the survivors
  if (loomAllReduce(&sum, &sum, 1, loomInt32, loomSum, survivors, nullptr) != loomSuccess) {
    std::printf("shrink_survivor rank %d: all-reduce after the shrink failed: %s\n", rank,
                loomGetLastError(survivors));
    return 1;
  }
  std::printf("shrink_survivor rank %d: now rank %d of %d, sum %d\n", rank, newRank, newSize, sum);
  std::fflush(stdout);
  loomCommDestroy(survivors);
  loomCommDestroy(world);
  return 0;
}
