// A walk that never ends, on the emulated runtime (two processes, loomrun):
// rank 1's first all-reduce is accepted but never runs
// (LOOM_EMULATED_LOSE_WALKS), so rank 0's walk times out. Ranks in processes
// of their own decide each call alone (no exchange per call), so the failure
// reaches each rank through its own walks:
// - rank 0: loomCommGetAsyncError says loomRemoteError once its walk has
//   ended, and its next collective fails with loomRemoteError at once;
// - rank 1: its next collective, made once rank 0's walk has timed out, is
//   enqueued, waits for rank 0, which never walks it, and stops at
//   LOOM_TIMEOUT; then its async error and the call after fail with
//   loomRemoteError naming rank 0. (Made at once, that walk would feed rank
//   0's first one, which waits for exactly such messages: a launch that is
//   accepted and never runs is this emulator's injection, not something a
//   device does, so the test keeps the two apart in time.)
// Nobody stages a call that a rank with a failed walk would not join.
// Prints "lost walk: reported" on success.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

namespace {

constexpr size_t kCount = 4099;

loomResult_t allReduce(float* data, loomComm_t comm, cudaStream_t stream) {
  return loomAllReduce(data, data, kCount, loomFloat32, loomSum, comm, stream);
}

bool asyncErrorIsRemote(loomComm_t comm) {
  loomResult_t async = loomSuccess;
  return loomCommGetAsyncError(comm, &async) == loomSuccess && async == loomRemoteError;
}

}  // namespace

int main() {
  const auto [comm, rank, stream] = loom::emulated_test::joinJob();
  float* data = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&data), kCount * sizeof(float));

  if (rank == 1) setenv("LOOM_EMULATED_LOSE_WALKS", "1", 1);
  if (allReduce(data, comm, stream) != loomSuccess) {
    return fail(rank, "the first all-reduce was refused; it should be enqueued");
  }
  if (rank == 1) unsetenv("LOOM_EMULATED_LOSE_WALKS");
  cudaStreamSynchronize(stream);  // rank 0: the walk ends at LOOM_TIMEOUT

  if (rank == 0) {
    if (!asyncErrorIsRemote(comm)) {
      return fail(rank, "loomCommGetAsyncError did not report the timed-out walk");
    }
    if (allReduce(data, comm, stream) != loomRemoteError) {
      return fail(rank, "the next all-reduce did not fail");
    }
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(5));  // past rank 0's LOOM_TIMEOUT=3
    if (allReduce(data, comm, stream) != loomSuccess) {
      return fail(rank, "the second all-reduce was refused; it should be enqueued");
    }
    cudaStreamSynchronize(stream);  // waits for rank 0 until LOOM_TIMEOUT
    if (!asyncErrorIsRemote(comm)) {
      return fail(rank, "loomCommGetAsyncError did not report the walk rank 0 never met");
    }
    if (allReduce(data, comm, stream) != loomRemoteError) {
      return fail(rank, "the all-reduce after the failed walk did not fail");
    }
    if (std::strstr(loomGetLastError(nullptr), "rank 0") == nullptr) {
      return fail(rank, "the error does not name rank 0");
    }
  }
  std::printf("rank %d: %s\n", rank, loomGetLastError(nullptr));
  std::printf("lost walk: reported\n");
  cudaFree(data);
  cudaStreamDestroy(stream);
  loomCommDestroy(comm);
  return 0;
}
