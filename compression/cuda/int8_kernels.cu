// int8 block quantisation on the device.
//
// Encode gives each codec block to one warp: the block's absmax is then a
// warp-wide max (no shared memory, no __syncthreads), lanes read consecutive
// elements so loads coalesce, and a block of any size (8 .. 65536) works the
// same way. Three kernels (fp32, fp16, bf16 input); nearest/stochastic is a
// launch-uniform runtime flag, not a template, for the same reason the
// reduction op is one (collectives/cuda/reduce_kernel.cu).
#include <cstring>

#include "compression/counter_hash.h"
#include "compression/cuda/device_int8.h"
#include "compression/cuda/kernel_launch.cuh"
#include "compression/int8_math.h"

namespace loom::cuda {
namespace {

using namespace codec;

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarp;

struct Layout {
  size_t n;
  size_t block;
  size_t blocks;
};

Layout layoutFor(size_t n, const CodecConfig& config) {
  const size_t block = config.block;
  return Layout{n, block, (n + block - 1) / block};
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    int8EncodeKernel(const typename E::Storage* src, Layout layout, unsigned char* dst,
                     bool stochastic, uint64_t key, uint64_t firstIndex) {
  const unsigned lane = threadIdx.x % kWarp;
  const size_t warpsInGrid = static_cast<size_t>(gridDim.x) * kWarpsPerBlock;
  int8_t* codes = reinterpret_cast<int8_t*>(dst + layout.blocks * sizeof(float));
  // Every lane of a warp walks the same codec blocks, so the warp-wide max
  // below always has all 32 lanes present.
  for (size_t b = static_cast<size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
       b < layout.blocks; b += warpsInGrid) {
    const size_t start = b * layout.block;
    const size_t len = layout.n - start < layout.block ? layout.n - start : layout.block;
    uint32_t absmax = 0;
    for (size_t i = lane; i < len; i += kWarp) {
      const uint32_t m = magnitudeBits(E::widen(src[start + i]));
      absmax = m > absmax ? m : absmax;
    }
    absmax = __reduce_max_sync(0xffffffffu, absmax);
    const Int8Block block = int8BlockFromAbsmax(absmax);
    for (size_t i = lane; i < len; i += kWarp) {
      const float x = E::widen(src[start + i]);
      int8_t code = 0;  // a non-finite block stores zeros; its NaN scale decides
      if (block.finite) {
        code = stochastic
                   ? int8QuantizeStochastic(x, block, streamBits(key, firstIndex + start + i))
                   : int8QuantizeNearest(x, block);
      }
      codes[start + i] = code;
    }
    if (lane == 0) memcpy(dst + b * sizeof(float), &block.scale, sizeof(float));
  }
}

/// Calls apply(i, value) for every element of an encoding (grid-stride).
template <typename Apply>
__device__ void forEachDequantized(const unsigned char* src, const Layout& layout, Apply apply) {
  const int8_t* codes = reinterpret_cast<const int8_t*>(src + layout.blocks * sizeof(float));
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < layout.n;
       i += stride) {
    float scale;
    memcpy(&scale, src + (i / layout.block) * sizeof(float), sizeof(float));
    apply(i, int8Dequantize(codes[i], scale));
  }
}

__global__ void __launch_bounds__(kThreads)
    int8DecodeAccumulateKernel(const unsigned char* src, Layout layout, float* acc) {
  forEachDequantized(src, layout, [acc](size_t i, float v) { acc[i] = addRn(acc[i], v); });
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    int8DecodeKernel(const unsigned char* src, Layout layout, typename E::Storage* out) {
  forEachDequantized(src, layout, [out](size_t i, float v) { out[i] = E::narrow(v); });
}

}  // namespace

cudaError_t preloadInt8Kernels() {
  cudaFuncAttributes attributes{};
  for (const void* kernel : {reinterpret_cast<const void*>(int8EncodeKernel<NativeElem<float>>),
                             reinterpret_cast<const void*>(int8EncodeKernel<HalfElem>),
                             reinterpret_cast<const void*>(int8EncodeKernel<Bf16Elem>),
                             reinterpret_cast<const void*>(int8DecodeKernel<NativeElem<float>>),
                             reinterpret_cast<const void*>(int8DecodeKernel<HalfElem>),
                             reinterpret_cast<const void*>(int8DecodeKernel<Bf16Elem>),
                             reinterpret_cast<const void*>(int8DecodeAccumulateKernel)}) {
    const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

size_t int8EncodedBytes(size_t n, const CodecConfig& config) {
  return layoutFor(n, config).blocks * sizeof(float) + n;
}

cudaError_t launchInt8Encode(const void* src, DataType type, size_t n, void* dst,
                             const CodecConfig& config, const EncodeContext& context,
                             cudaStream_t stream) {
  if (config.block == 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const Layout layout = layoutFor(n, config);
  const uint64_t key = streamKey(config.seed, context.counter);
  return withFloatElement(type, [&](auto element) {
    using E = decltype(element);
    int8EncodeKernel<E><<<gridFor(layout.blocks, kWarpsPerBlock), kThreads, 0, stream>>>(
        static_cast<const typename E::Storage*>(src), layout, static_cast<unsigned char*>(dst),
        config.stochastic, key, context.firstIndex);
    return cudaGetLastError();
  });
}

cudaError_t launchInt8DecodeAccumulate(const void* src, size_t n, const CodecConfig& config,
                                       float* acc, cudaStream_t stream) {
  if (config.block == 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const Layout layout = layoutFor(n, config);
  int8DecodeAccumulateKernel<<<gridFor(n, kThreads), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(src), layout, acc);
  return cudaGetLastError();
}

cudaError_t launchInt8Decode(const void* src, size_t n, const CodecConfig& config, DataType type,
                             void* out, cudaStream_t stream) {
  if (config.block == 0) return cudaErrorInvalidValue;
  const Layout layout = layoutFor(n, config);
  return withFloatElement(type, [&](auto element) -> cudaError_t {
    using E = decltype(element);
    if (n == 0) return cudaSuccess;
    int8DecodeKernel<E><<<gridFor(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const unsigned char*>(src), layout, static_cast<typename E::Storage*>(out));
    return cudaGetLastError();
  });
}

}  // namespace loom::cuda
