/* The C interface between libloom and its CUDA kernel plugin,
 * libloom_cuda_kernels.so (collectives/cuda/kernel_plugin.cc).
 *
 * libloom never links the CUDA runtime (src/device/cuda_runtime.h); the
 * kernels need one, so they live in a plugin that libloom opens with dlopen
 * when it is built and a device is there. Plain C types only: the two sides
 * may be built apart, and the version number says when they disagree. */
#ifndef LOOM_DEVICE_CUDA_KERNELS_ABI_H_
#define LOOM_DEVICE_CUDA_KERNELS_ABI_H_

#include <stddef.h>

#define LOOM_CUDA_KERNELS_ABI_VERSION 3
#define LOOM_CUDA_KERNELS_ENTRY "loomCudaKernels"

typedef struct {
  int abiVersion; /* LOOM_CUDA_KERNELS_ABI_VERSION */
  /* dst[i] = a[i] (op) b[i] on `stream`; type and op are loom::DataType and
   * loom::ReduceOp values (Avg reduces as Sum). Returns a cudaError_t. */
  int (*reduce)(void* dst, const void* a, const void* b, size_t n, int type, int op, void* stream);
  /* data[i] /= nranks on `stream` (Avg's last step). Returns a cudaError_t. */
  int (*avgFinalize)(void* data, size_t n, int type, int nranks, void* stream);
  /* Walks one rank's plan on `stream`, one thread block per channel: `args`
   * is device memory holding the block walk::buildWalkProgram made for that
   * address (collectives/walker/). Returns a cudaError_t; a walk that fails
   * (timeout, abort) says so in the block's status words. */
  int (*walk)(const void* args, int type, unsigned channels, void* stream);
  /* Loads the walk kernels on the current device before any walk: a lazily
   * loaded kernel's first launch may wait for the device, where peers' walks
   * spin until this rank's arrives. Returns a cudaError_t. */
  int (*prepareWalk)(void);
} LoomCudaKernels;

/* The plugin's one exported function. */
typedef const LoomCudaKernels* (*LoomCudaKernelsEntry)(void);

#endif /* LOOM_DEVICE_CUDA_KERNELS_ABI_H_ */
