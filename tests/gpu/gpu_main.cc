// main() for the GPU tests: exits 77 (ctest's SKIP_RETURN_CODE) with the reason
// when there is no usable CUDA device, so ctest reports "Skipped", never a pass.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tools/stack_dump/stack_dump.h"

int main(int argc, char** argv) {
  loom::debug::dumpStacksOnSigquit();  // scripts/run-with-stacks.sh, on a stall
  // The tests run up to 8 ranks as threads on one device; CUDA gives a
  // process 8 hardware queues per device unless told, and Loom's kernel path
  // wants twice the ranks (docs/cuda.md). Read at the first CUDA call.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "cudaGetDeviceCount is 0");
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
