/* The C interface between libloom and its CUDA kernel plugin,
 * libloom_cuda_kernels.so (collectives/cuda/kernel_plugin.cc).
 *
 * libloom never links the CUDA runtime (base/device/cuda_runtime.h); the
 * kernels need one, so they live in a plugin that libloom opens with dlopen
 * when it is built and a device is there. Plain C types only: the two sides
 * may be built apart, and the version number says when they disagree. */
#ifndef LOOM_DEVICE_CUDA_KERNELS_ABI_H_
#define LOOM_DEVICE_CUDA_KERNELS_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define LOOM_CUDA_KERNELS_ABI_VERSION 8
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
  /* The int8 codec (compression/int8_codec.h) on device memory, giving the
   * host codec's bytes and floats exactly: `block` elements per scale;
   * nearest rounding, or stochastic (nonzero) with the bits of (seed,
   * counter, firstIndex + i) as EncodeContext says. `type` is a
   * loom::DataType among fp32, fp16, bf16. n may be 0. Each enqueues on
   * `stream` and returns a cudaError_t; prepareWalk loads them too. */
  int (*int8Encode)(const void* src, int type, size_t n, void* dst, uint32_t block, int stochastic,
                    uint64_t seed, uint64_t firstIndex, uint64_t counter, void* stream);
  int (*int8Decode)(const void* src, size_t n, uint32_t block, int type, void* out, void* stream);
  /* acc[i] += decoded[i] in fp32, one rounding per element. */
  int (*int8DecodeAccumulate)(const void* src, size_t n, uint32_t block, float* acc, void* stream);
  /* How many walk thread blocks the current device holds at once (its SMs
   * times the blocks of the heaviest walk kernel one SM fits): the walks of
   * every rank on a device spin until their peers' blocks run, so together
   * they must fit. Returns a cudaError_t. */
  int (*walkResidentBlocks)(int* blocks);
  /* sum[i] = the fp32 sum, in order r = 0, 1, ..., of element i of the
   * `sources` encodings at src + r * stride (n elements each): a zeroed sum
   * decode-accumulated once per source, bit for bit, in one pass. */
  int (*int8DecodeSum)(const void* src, size_t stride, int sources, size_t n, uint32_t block,
                       float* sum, void* stream);
  /* int8Encode of src[i] + residual[i] (fp32), then residual[i] = that
   * value minus its decoded code, 0 where not finite: ErrorFeedback's
   * compensate, encode and update (compression/error_feedback.h) in one pass,
   * bit for bit. residual is device memory of n floats. */
  int (*int8EncodeFeedback)(const void* src, int type, size_t n, float* residual, void* dst,
                            uint32_t block, int stochastic, uint64_t seed, uint64_t firstIndex,
                            uint64_t counter, void* stream);
  /* The top-k codec (compression/topk_codec.h) on device memory, the host
   * codec's bytes and floats exactly. Encode keeps ceil(ratio * n) entries of
   * src (fp32/fp16/bf16), with `work` (256-byte aligned) holding
   * topkEncodeWorkBytes(n) for this call until it completes. The decoders
   * check the encoding (srcBytes long) first: on a malformed one they write
   * nothing and set *status (device-visible memory) to 1, else to 0. */
  int (*topkEncode)(const void* src, int type, size_t n, void* dst, double ratio, void* work,
                    void* stream);
  size_t (*topkEncodeWorkBytes)(size_t n);
  int (*topkDecodeAccumulate)(const void* src, size_t srcBytes, size_t n, float* acc, int* status,
                              void* stream);
  int (*topkDecode)(const void* src, size_t srcBytes, size_t n, int type, void* out, int* status,
                    void* stream);
  /* Error feedback for codecs without a fused encode: out[i] = src[i] +
   * residual[i] in fp32, and residual[i] = out[i] (0 where not finite); then,
   * after the encode, topkForgetKept sets residual to 0 at every index this
   * rank's own encoding kept. Together: ErrorFeedback's update, bit for bit. */
  int (*compensate)(const void* src, int type, size_t n, float* residual, float* out, void* stream);
  int (*topkForgetKept)(const void* encoding, size_t encodedBytes, size_t n, float* residual,
                        void* stream);
  /* out[i] = src[i] as `type` (fp32, fp16 or bf16), one rounding. */
  int (*narrowFloats)(const float* src, size_t n, int type, void* out, void* stream);
} LoomCudaKernels;

/* The plugin's one exported function. */
typedef const LoomCudaKernels* (*LoomCudaKernelsEntry)(void);

#endif /* LOOM_DEVICE_CUDA_KERNELS_ABI_H_ */
