// A compressed all-reduce on the kernel path whose codec scratch one rank
// cannot allocate, on the emulated runtime (two processes, loomrun): rank 1
// refuses large cudaMalloc calls (LOOM_EMULATED_REFUSE_MALLOC_FROM) for its
// first call. Both ranks must fail that call with loomUnhandledCudaError naming rank 1
// (neither waits for the other), leaving the data untouched, and the same
// call must then succeed on both, bit for bit what the same call gives on
// host buffers. Prints "scratch refused: reported" on success.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

int main() {
  const auto [comm, rank, stream] = loom::emulated_test::joinJob();
  // The scratch (encodings and fp32 sums) passes the limit below; everything
  // else rank 1 allocates comes before it is set.
  constexpr size_t kCount = size_t{3} << 20;
  constexpr size_t kRefuseFrom = size_t{1} << 20;
  float* data = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&data), kCount * sizeof(float)) != cudaSuccess) {
    return fail(rank, "cudaMalloc of the data");
  }
  std::vector<float> input(kCount);
  for (size_t i = 0; i < kCount; ++i) input[i] = std::sin(0.001f * static_cast<float>(i + rank));
  cudaMemcpyAsync(data, input.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, stream);
  cudaStreamSynchronize(stream);
  loomCompression int8{};
  int8.kind = loomCompressInt8;

  if (rank == 1) setenv("LOOM_EMULATED_REFUSE_MALLOC_FROM", std::to_string(kRefuseFrom).c_str(), 1);
  const loomResult_t refused =
      loomAllReduceEx(data, data, kCount, loomFloat32, loomSum, &int8, comm, stream);
  if (rank == 1) unsetenv("LOOM_EMULATED_REFUSE_MALLOC_FROM");
  if (refused != loomUnhandledCudaError)
    return fail(rank, "the refused scratch did not fail the call");
  const std::string why = loomGetLastError(comm);
  if (why.find("rank(s) 1 could not allocate") == std::string::npos) {
    return fail(rank, "the error does not name rank 1");
  }
  std::printf("rank %d: %s\n", rank, why.c_str());

  // The data is untouched, and the same call now runs.
  std::vector<float> out(kCount);
  cudaMemcpy(out.data(), data, kCount * sizeof(float), cudaMemcpyDeviceToHost);
  if (out != input) return fail(rank, "the failed call changed the data");
  if (loomAllReduceEx(data, data, kCount, loomFloat32, loomSum, &int8, comm, stream) !=
      loomSuccess) {
    return fail(rank, "the call after the refusal failed");
  }
  cudaStreamSynchronize(stream);
  cudaMemcpy(out.data(), data, kCount * sizeof(float), cudaMemcpyDeviceToHost);
  // The reference: the same call on host buffers (the host codec).
  std::vector<float> reference = input;
  if (loomAllReduceEx(reference.data(), reference.data(), kCount, loomFloat32, loomSum, &int8, comm,
                      nullptr) != loomSuccess) {
    return fail(rank, "the host reference failed");
  }
  if (out != reference) return fail(rank, "the device result differs from the host codec's");
  std::printf("scratch refused: reported\n");
  cudaFree(data);
  cudaStreamDestroy(stream);
  loomCommDestroy(comm);
  return 0;
}
