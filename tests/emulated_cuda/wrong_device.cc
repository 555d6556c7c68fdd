// Buffers on another device than the communicator's (two processes on two
// emulated devices, loomrun): each rank makes its communicator on device
// rank % 2, then calls an all-reduce on a buffer it allocated on the other
// device. Each rank decides alone, so both refuse the call with
// loomInvalidUsage naming both devices, the buffer untouched, and a call on
// the right device still runs. Prints "wrong device: refused" on success.
// Run with LOOM_EMULATED_DEVICES=2.
#include <cuda_runtime_api.h>
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/emulated_cuda/emulated_rank.h"

using loom::emulated_test::fail;

namespace {

constexpr size_t kCount = 1031;

float* deviceBufferOf(float value) {
  float* data = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&data), kCount * sizeof(float));
  const std::vector<float> host(kCount, value);
  cudaMemcpy(data, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
  return data;
}

bool holds(const float* data, float value) {
  std::vector<float> host(kCount);
  cudaMemcpy(host.data(), data, kCount * sizeof(float), cudaMemcpyDeviceToHost);
  for (float v : host) {
    if (v != value) return false;
  }
  return true;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) {
    std::printf("fewer than two CUDA devices: skipping\n");
    return 77;
  }
  const char* rankText = std::getenv("LOOM_LOCAL_RANK");
  const int mine = (rankText != nullptr ? std::atoi(rankText) : 0) % 2;
  cudaSetDevice(mine);
  const auto [comm, rank, stream] = loom::emulated_test::joinJob();

  cudaSetDevice(1 - mine);
  float* elsewhere = deviceBufferOf(1.0f);
  cudaSetDevice(mine);
  if (loomAllReduce(elsewhere, elsewhere, kCount, loomFloat32, loomSum, comm, stream) !=
      loomInvalidUsage) {
    return fail(rank, "a call on another device's buffer was not refused as invalid usage");
  }
  const std::string why = loomGetLastError(nullptr);
  const std::string named = "on device " + std::to_string(1 - mine) +
                            ", but the communicator runs its device collectives on device " +
                            std::to_string(mine);
  if (why.find(named) == std::string::npos)
    return fail(rank, "the refusal names the wrong devices");
  cudaStreamSynchronize(stream);
  if (!holds(elsewhere, 1.0f)) return fail(rank, "the refused call changed the buffer");

  float* here = deviceBufferOf(static_cast<float>(rank + 1));
  if (loomAllReduce(here, here, kCount, loomFloat32, loomSum, comm, stream) != loomSuccess) {
    return fail(rank, "a call on the communicator's device failed after the refusal");
  }
  cudaStreamSynchronize(stream);
  if (!holds(here, 3.0f)) return fail(rank, "wrong sum after the refusal");
  std::printf("rank %d: %s\n", rank, why.c_str());
  std::printf("wrong device: refused\n");
  cudaFree(here);
  cudaFree(elsewhere);
  cudaStreamDestroy(stream);
  loomCommDestroy(comm);
  return 0;
}
