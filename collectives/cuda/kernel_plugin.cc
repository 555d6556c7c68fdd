// libloom_cuda_kernels.so: the entry point libloom opens to reach the device
// kernels (base/device/cuda_kernels_abi.h). Everything else in this library is
// hidden by its version script, so its copy of Loom's internals never mixes
// with libloom's.
#include "collectives/cuda/device_reduce.h"
#include "collectives/cuda/walk_launch.h"
#include "compression/cuda/device_fp32.h"
#include "compression/cuda/device_int8.h"
#include "compression/cuda/device_topk.h"
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

int prepareWalk() {
  cudaError_t status = loom::cuda::preloadWalkKernels();
  if (status == cudaSuccess) status = loom::cuda::preloadInt8Kernels();
  if (status == cudaSuccess) status = loom::cuda::preloadAvgFinalizeKernels();
  if (status == cudaSuccess) status = loom::cuda::preloadFp32Kernels();
  if (status == cudaSuccess) status = loom::cuda::preloadTopkKernels();
  return status;
}

int int8Encode(const void* src, int type, size_t n, void* dst, uint32_t block, int stochastic,
               uint64_t seed, uint64_t firstIndex, uint64_t counter, void* stream) {
  return loom::cuda::launchInt8Encode(src, static_cast<loom::DataType>(type), n, dst,
                                      loom::int8CodecConfig(block, stochastic != 0, seed),
                                      {firstIndex, counter}, static_cast<cudaStream_t>(stream));
}

int int8EncodeFeedback(const void* src, int type, size_t n, float* residual, void* dst,
                       uint32_t block, int stochastic, uint64_t seed, uint64_t firstIndex,
                       uint64_t counter, void* stream) {
  return loom::cuda::launchInt8EncodeWithFeedback(
      src, static_cast<loom::DataType>(type), n, residual, dst,
      loom::int8CodecConfig(block, stochastic != 0, seed), {firstIndex, counter},
      static_cast<cudaStream_t>(stream));
}

int topkEncode(const void* src, int type, size_t n, void* dst, double ratio, void* work,
               void* stream) {
  loom::CodecConfig config;
  config.kind = loom::CodecKind::Topk;
  config.ratio = ratio;
  return loom::cuda::launchTopkEncode(src, static_cast<loom::DataType>(type), n, dst, config, work,
                                      static_cast<cudaStream_t>(stream));
}

size_t topkEncodeWorkBytes(size_t n) { return loom::cuda::topkEncodeScratchBytes(n); }

int topkDecodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc, int* status,
                         void* stream) {
  return loom::cuda::launchTopkDecodeAccumulate(src, srcBytes, n, acc, status,
                                                static_cast<cudaStream_t>(stream));
}

int topkDecode(const void* src, size_t srcBytes, size_t n, int type, void* out, int* status,
               void* stream) {
  return loom::cuda::launchTopkDecode(src, srcBytes, n, static_cast<loom::DataType>(type), out,
                                      status, static_cast<cudaStream_t>(stream));
}

int compensate(const void* src, int type, size_t n, float* residual, float* out, void* stream) {
  return loom::cuda::launchCompensate(src, static_cast<loom::DataType>(type), n, residual, out,
                                      static_cast<cudaStream_t>(stream));
}

int topkForgetKept(const void* encoding, size_t encodedBytes, size_t n, float* residual,
                   void* stream) {
  return loom::cuda::launchTopkForgetKept(encoding, encodedBytes, n, residual,
                                          static_cast<cudaStream_t>(stream));
}

int narrowFloats(const float* src, size_t n, int type, void* out, void* stream) {
  return loom::cuda::launchNarrow(src, n, static_cast<loom::DataType>(type), out,
                                  static_cast<cudaStream_t>(stream));
}

int int8Decode(const void* src, size_t n, uint32_t block, int type, void* out, void* stream) {
  return loom::cuda::launchInt8Decode(src, n, loom::int8CodecConfig(block, false, 0),
                                      static_cast<loom::DataType>(type), out,
                                      static_cast<cudaStream_t>(stream));
}

int int8DecodeAccumulate(const void* src, size_t n, uint32_t block, float* acc, void* stream) {
  return loom::cuda::launchInt8DecodeAccumulate(src, n, loom::int8CodecConfig(block, false, 0), acc,
                                                static_cast<cudaStream_t>(stream));
}

int walkResidentBlocks(int* blocks) { return loom::cuda::walkResidentBlocks(blocks); }

int int8DecodeSum(const void* src, size_t stride, int sources, size_t n, uint32_t block, float* sum,
                  void* stream) {
  return loom::cuda::launchInt8DecodeSum(src, stride, sources, n,
                                         loom::int8CodecConfig(block, false, 0), sum,
                                         static_cast<cudaStream_t>(stream));
}

// Every entry by its name in the ABI struct (base/device/cuda_kernels_abi.h):
// the compiler checks this table and the emulated one against that one list.
constexpr LoomCudaKernels kTable = {.abiVersion = LOOM_CUDA_KERNELS_ABI_VERSION,
                                    .reduce = &reduce,
                                    .avgFinalize = &avgFinalize,
                                    .walk = &walk,
                                    .prepareWalk = &prepareWalk,
                                    .int8Encode = &int8Encode,
                                    .int8Decode = &int8Decode,
                                    .int8DecodeAccumulate = &int8DecodeAccumulate,
                                    .walkResidentBlocks = &walkResidentBlocks,
                                    .int8DecodeSum = &int8DecodeSum,
                                    .int8EncodeFeedback = &int8EncodeFeedback,
                                    .topkEncode = &topkEncode,
                                    .topkEncodeWorkBytes = &topkEncodeWorkBytes,
                                    .topkDecodeAccumulate = &topkDecodeAccumulate,
                                    .topkDecode = &topkDecode,
                                    .compensate = &compensate,
                                    .topkForgetKept = &topkForgetKept,
                                    .narrowFloats = &narrowFloats};

}  // namespace

extern "C" const LoomCudaKernels* loomCudaKernels(void) { return &kTable; }
