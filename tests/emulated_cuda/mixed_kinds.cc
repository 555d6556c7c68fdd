// One call, two kinds of buffers (two processes on the emulated runtime,
// loomrun): rank 0 passes host buffers, rank 1 device buffers. Each rank
// classifies its call alone (no exchange per call), so they take different
// roads; neither may hang. Rank 0's host call fails within a few deadlines,
// and rank 1's walk, enqueued, stops at its deadline and reports it
// (loomCommGetAsyncError). Prints "mixed kinds: both stopped" on success.
// Run with LOOM_TIMEOUT=3.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

int main() {
  const auto [comm, rank, stream] = loom::emulated_test::joinJob();
  constexpr size_t kCount = 4099;
  constexpr auto kBound = std::chrono::seconds(20);  // LOOM_TIMEOUT=3, with room
  const auto start = std::chrono::steady_clock::now();
  if (rank == 0) {
    std::vector<float> host(kCount, 1.0f);
    if (loomAllReduce(host.data(), host.data(), kCount, loomFloat32, loomSum, comm, nullptr) ==
        loomSuccess) {
      return fail(rank, "a host all-reduce met by a device one succeeded");
    }
  } else {
    float* data = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&data), kCount * sizeof(float));
    if (loomAllReduce(data, data, kCount, loomFloat32, loomSum, comm, stream) != loomSuccess) {
      return fail(rank, "the device all-reduce was refused; it should be enqueued");
    }
    cudaStreamSynchronize(stream);  // the walk ends at LOOM_TIMEOUT
    loomResult_t async = loomSuccess;
    if (loomCommGetAsyncError(comm, &async) != loomSuccess || async != loomRemoteError) {
      return fail(rank, "the walk that met no peer was not reported");
    }
    cudaFree(data);
  }
  if (std::chrono::steady_clock::now() - start > kBound) return fail(rank, "stopped too late");
  std::printf("rank %d: %s\n", rank, loomGetLastError(nullptr));
  std::printf("mixed kinds: both stopped\n");
  cudaStreamDestroy(stream);
  loomCommAbort(comm);
  return 0;
}
