// A walk that never ends, on the emulated runtime (two processes, loomrun):
// rank 1's first all-reduce is accepted but never runs
// (LOOM_EMULATED_LOSE_WALKS), so rank 0's walk times out. Then:
// loomCommGetAsyncError on rank 0 says loomRemoteError once its walk has
// ended, and the next collective fails on *both* ranks with loomRemoteError
// (nobody stages a call that a rank with a failed walk would not join).
// Prints "lost walk: reported" on success.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

int main() {
  const auto [comm, rank, stream] = loom::emulated_test::joinJob();
  constexpr size_t kCount = 4099;
  float* data = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&data), kCount * sizeof(float));

  if (rank == 1) setenv("LOOM_EMULATED_LOSE_WALKS", "1", 1);
  if (loomAllReduce(data, data, kCount, loomFloat32, loomSum, comm, stream) != loomSuccess) {
    return fail(rank, "the first all-reduce was refused; it should be enqueued");
  }
  if (rank == 1) unsetenv("LOOM_EMULATED_LOSE_WALKS");
  cudaStreamSynchronize(stream);  // rank 0: the walk ends at LOOM_TIMEOUT

  if (rank == 0) {
    loomResult_t async = loomSuccess;
    if (loomCommGetAsyncError(comm, &async) != loomSuccess || async != loomRemoteError) {
      return fail(rank, "loomCommGetAsyncError did not report the timed-out walk");
    }
  }
  const loomResult_t second = loomAllReduce(data, data, kCount, loomFloat32, loomSum, comm, stream);
  if (second != loomRemoteError) return fail(rank, "the next all-reduce did not fail");
  std::printf("rank %d: %s\n", rank, loomGetLastError(nullptr));
  std::printf("lost walk: reported\n");
  cudaFree(data);
  cudaStreamDestroy(stream);
  loomCommDestroy(comm);
  return 0;
}
