// What the emulated failure programs (lost_walk.cc, scratch_refused.cc)
// share: one rank of a loomrun job on the emulated device, with its stream.
#pragma once

#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>

namespace loom::emulated_test {

struct Rank {
  loomComm_t comm = nullptr;
  int rank = -1;
  cudaStream_t stream = nullptr;
};

/// Prints why rank `rank` failed, with Loom's last error; returns 1.
inline int fail(int rank, const char* what) {
  std::fprintf(stderr, "rank %d: %s (%s)\n", rank, what, loomGetLastError(nullptr));
  return 1;
}

/// Joins the job (loomCommInitFromEnv) with a non-blocking stream. Exits 77
/// (ctest's skip) without a CUDA device, 1 when init fails.
inline Rank joinJob() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping\n");
    std::exit(77);
  }
  Rank r;
  if (loomCommInitFromEnv(&r.comm) != loomSuccess) std::exit(fail(-1, "init"));
  loomCommUserRank(r.comm, &r.rank);
  cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking);
  return r;
}

}  // namespace loom::emulated_test
