// libloom_cuda_kernels.so: the entry point libloom opens to reach the device
// kernels (src/device/cuda_kernels_abi.h). Everything else in this library is
// hidden by its version script, so its copy of Loom's internals never mixes
// with libloom's.
#include "collectives/cuda/device_reduce.h"
#include "collectives/cuda/device_walk.h"
#include "device/cuda_kernels_abi.h"

namespace {

int reduce(void* dst, const void* a, const void* b, size_t n, int type, int op, void* stream) {
  return loom::cuda::launchReduce(dst, a, b, n, static_cast<loom::DataType>(type),
                                  static_cast<loom::ReduceOp>(op),
                                  static_cast<cudaStream_t>(stream));
}

int avgFinalize(void* data, size_t n, int type, int nranks, void* stream) {
  return loom::cuda::launchAvgFinalize(data, n, static_cast<loom::DataType>(type), nranks,
                                       static_cast<cudaStream_t>(stream));
}

int walk(const void* args, int type, unsigned channels, void* stream) {
  return loom::cuda::launchWalk(static_cast<const loom::walk::WalkArgs*>(args),
                                static_cast<loom::DataType>(type), channels,
                                static_cast<cudaStream_t>(stream));
}

int prepareWalk() { return loom::cuda::preloadWalkKernels(); }

constexpr LoomCudaKernels kTable = {LOOM_CUDA_KERNELS_ABI_VERSION, &reduce, &avgFinalize, &walk,
                                    &prepareWalk};

}  // namespace

extern "C" const LoomCudaKernels* loomCudaKernels(void) { return &kTable; }
