// int8 block quantisation on the device.
//
// Encode gives each codec block to one warp: the block's absmax is then a
// warp-wide max (no shared memory, no __syncthreads), lanes read consecutive
// elements so loads coalesce, and a block of any size (8 .. 65536) works the
// same way. Three kernels (fp32, fp16, bf16 input); nearest/stochastic is a
// launch-uniform runtime flag, not a template, for the same reason the
// reduction op is one (collectives/cuda/reduce_kernel.cu).
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>

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

/// Four consecutive elements, loaded or stored as one access when the
/// pointers allow (quadAligned): a lane's 1-byte code stores and 4-byte
/// loads left an H200 at 58 % of its copy bandwidth.
template <typename T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};
struct alignas(4) CodeQuad {
  int8_t v[4];
};

/// Whether the four-at-a-time kernels may run: every codec block starts on a
/// quad (block % 4 == 0) and every base pointer is aligned for quads.
bool quadAligned(size_t block, std::initializer_list<std::pair<const void*, size_t>> pointers) {
  if (block % 4 != 0) return false;
  for (const auto& [pointer, alignment] : pointers) {
    if (reinterpret_cast<uintptr_t>(pointer) % alignment != 0) return false;
  }
  return true;
}

__device__ int8_t encodeOne(float x, const Int8Block& block, bool stochastic, uint64_t key,
                            uint64_t index) {
  if (!block.finite) return 0;  // a non-finite block stores zeros; its NaN scale decides
  return stochastic ? int8QuantizeStochastic(x, block, streamBits(key, index))
                    : int8QuantizeNearest(x, block);
}

/// What the encode kernel quantises: the input widened to fp32, or with
/// error feedback (kFeedback) the input plus the residual, which the kernel
/// then replaces with what the encoding lost (ErrorFeedback's compensate and
/// update, bit for bit: a non-finite loss stores 0).
template <typename E, bool kFeedback>
struct EncodeSource {
  const typename E::Storage* src;
  float* residual;  ///< kFeedback only

  __device__ float at(size_t i) const {
    const float x = E::widen(src[i]);
    return kFeedback ? addRn(x, residual[i]) : x;
  }
  template <typename Q>
  __device__ void atQuad(size_t q, const Q& in, float (&out)[4]) const {
    if constexpr (kFeedback) {
      const Quad<float> r = reinterpret_cast<const Quad<float>*>(residual)[q];
      for (int k = 0; k < 4; ++k) out[k] = addRn(E::widen(in.v[k]), r.v[k]);
    } else {
      for (int k = 0; k < 4; ++k) out[k] = E::widen(in.v[k]);
    }
  }
  __device__ static float lost(float value, int8_t code, float scale) {
    const float d = addRn(value, -int8Dequantize(code, scale));
    return isfinite(d) ? d : 0.0f;
  }
  __device__ void keep(size_t i, float value, int8_t code, float scale) const {
    if constexpr (kFeedback) residual[i] = lost(value, code, scale);
  }
  __device__ void keepQuad(size_t q, const float (&values)[4], const CodeQuad& codes,
                           float scale) const {
    if constexpr (kFeedback) {
      Quad<float> r;
      for (int k = 0; k < 4; ++k) r.v[k] = lost(values[k], codes.v[k], scale);
      reinterpret_cast<Quad<float>*>(residual)[q] = r;
    }
  }
};

template <typename E, bool kQuads, bool kFeedback>
__global__ void __launch_bounds__(kThreads)
    int8EncodeKernel(EncodeSource<E, kFeedback> source, Layout layout, unsigned char* dst,
                     bool stochastic, uint64_t key, uint64_t firstIndex) {
  using Storage = typename E::Storage;
  const unsigned lane = threadIdx.x % kWarp;
  const size_t warpsInGrid = static_cast<size_t>(gridDim.x) * kWarpsPerBlock;
  int8_t* codes = reinterpret_cast<int8_t*>(dst + layout.blocks * sizeof(float));
  // Every lane of a warp walks the same codec blocks, so the warp-wide max
  // below always has all 32 lanes present.
  for (size_t b = static_cast<size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
       b < layout.blocks; b += warpsInGrid) {
    const size_t start = b * layout.block;
    const size_t len = layout.n - start < layout.block ? layout.n - start : layout.block;
    // Quads cover the block's first len / 4 * 4 elements; single elements the rest.
    const size_t quads = kQuads ? len / 4 : 0;
    const auto* srcQuads = reinterpret_cast<const Quad<Storage>*>(source.src + start);
    const size_t firstQuad = start / 4;
    uint32_t absmax = 0;
    if constexpr (kQuads) {
      for (size_t q = lane; q < quads; q += kWarp) {
        float values[4];
        source.atQuad(firstQuad + q, srcQuads[q], values);
        for (int k = 0; k < 4; ++k) {
          const uint32_t m = magnitudeBits(values[k]);
          absmax = m > absmax ? m : absmax;
        }
      }
    }
    for (size_t i = quads * 4 + lane; i < len; i += kWarp) {
      const uint32_t m = magnitudeBits(source.at(start + i));
      absmax = m > absmax ? m : absmax;
    }
    absmax = __reduce_max_sync(0xffffffffu, absmax);
    const Int8Block block = int8BlockFromAbsmax(absmax);
    if constexpr (kQuads) {
      auto* codeQuads = reinterpret_cast<CodeQuad*>(codes + start);
      for (size_t q = lane; q < quads; q += kWarp) {
        float values[4];
        source.atQuad(firstQuad + q, srcQuads[q], values);
        CodeQuad out;
        for (int k = 0; k < 4; ++k) {
          out.v[k] = encodeOne(values[k], block, stochastic, key, firstIndex + start + 4 * q + k);
        }
        codeQuads[q] = out;
        source.keepQuad(firstQuad + q, values, out, block.scale);
      }
    }
    for (size_t i = quads * 4 + lane; i < len; i += kWarp) {
      const float value = source.at(start + i);
      const int8_t code = encodeOne(value, block, stochastic, key, firstIndex + start + i);
      codes[start + i] = code;
      source.keep(start + i, value, code, block.scale);
    }
    if (lane == 0) memcpy(dst + b * sizeof(float), &block.scale, sizeof(float));
  }
}

/// Calls apply(i, value) for every element of an encoding (grid-stride), or
/// applyQuad(q, values) for each quad of elements 4q .. 4q + 3 and apply for
/// the tail when kQuads (every quad then lies in one codec block).
template <bool kQuads, typename Apply, typename ApplyQuad>
__device__ void forEachDequantized(const unsigned char* src, const Layout& layout, Apply apply,
                                   ApplyQuad applyQuad) {
  const int8_t* codes = reinterpret_cast<const int8_t*>(src + layout.blocks * sizeof(float));
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t quads = kQuads ? layout.n / 4 : 0;
  if constexpr (kQuads) {
    const auto* codeQuads = reinterpret_cast<const CodeQuad*>(codes);
    for (size_t q = first; q < quads; q += stride) {
      float scale;
      memcpy(&scale, src + (4 * q / layout.block) * sizeof(float), sizeof(float));
      const CodeQuad in = codeQuads[q];
      float values[4];
      for (int k = 0; k < 4; ++k) values[k] = int8Dequantize(in.v[k], scale);
      applyQuad(q, values);
    }
  }
  for (size_t i = quads * 4 + first; i < layout.n; i += stride) {
    float scale;
    memcpy(&scale, src + (i / layout.block) * sizeof(float), sizeof(float));
    apply(i, int8Dequantize(codes[i], scale));
  }
}

template <bool kQuads>
__global__ void __launch_bounds__(kThreads)
    int8DecodeAccumulateKernel(const unsigned char* src, Layout layout, float* acc) {
  forEachDequantized<kQuads>(
      src, layout, [acc](size_t i, float v) { acc[i] = addRn(acc[i], v); },
      [acc](size_t q, const float* v) {
        auto* quads = reinterpret_cast<Quad<float>*>(acc);
        Quad<float> sum = quads[q];
        for (int k = 0; k < 4; ++k) sum.v[k] = addRn(sum.v[k], v[k]);
        quads[q] = sum;
      });
}

/// sum[i] = ((0 + d_0[i]) + d_1[i]) + ... over `sources` encodings of n
/// elements, the r-th at src + r * stride: the host's rank-order sum in one
/// pass. A decode-accumulate per source reads and writes the fp32 sum once
/// per source; this reads each code once and writes the sum once.
template <bool kQuads>
__global__ void __launch_bounds__(kThreads)
    int8DecodeSumKernel(const unsigned char* src, size_t stride, int sources, Layout layout,
                        float* sum) {
  const size_t scaleBytes = layout.blocks * sizeof(float);
  const size_t gridStride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t quads = kQuads ? layout.n / 4 : 0;
  if constexpr (kQuads) {
    for (size_t q = first; q < quads; q += gridStride) {
      const size_t scaleAt = (4 * q / layout.block) * sizeof(float);
      Quad<float> acc{{0.0f, 0.0f, 0.0f, 0.0f}};
      for (int r = 0; r < sources; ++r) {
        const unsigned char* encoding = src + static_cast<size_t>(r) * stride;
        float scale;
        memcpy(&scale, encoding + scaleAt, sizeof(float));
        const CodeQuad in = reinterpret_cast<const CodeQuad*>(encoding + scaleBytes)[q];
        for (int k = 0; k < 4; ++k) acc.v[k] = addRn(acc.v[k], int8Dequantize(in.v[k], scale));
      }
      reinterpret_cast<Quad<float>*>(sum)[q] = acc;
    }
  }
  for (size_t i = quads * 4 + first; i < layout.n; i += gridStride) {
    const size_t scaleAt = (i / layout.block) * sizeof(float);
    float acc = 0.0f;
    for (int r = 0; r < sources; ++r) {
      const unsigned char* encoding = src + static_cast<size_t>(r) * stride;
      float scale;
      memcpy(&scale, encoding + scaleAt, sizeof(float));
      acc = addRn(acc, int8Dequantize(static_cast<int8_t>(encoding[scaleBytes + i]), scale));
    }
    sum[i] = acc;
  }
}

template <typename E, bool kQuads>
__global__ void __launch_bounds__(kThreads)
    int8DecodeKernel(const unsigned char* src, Layout layout, typename E::Storage* out) {
  using Storage = typename E::Storage;
  forEachDequantized<kQuads>(
      src, layout, [out](size_t i, float v) { out[i] = E::narrow(v); },
      [out](size_t q, const float* v) {
        Quad<Storage> narrow;
        for (int k = 0; k < 4; ++k) narrow.v[k] = E::narrow(v[k]);
        reinterpret_cast<Quad<Storage>*>(out)[q] = narrow;
      });
}

}  // namespace

cudaError_t preloadInt8Kernels() {
  cudaFuncAttributes attributes{};
  for (const void* kernel :
       {reinterpret_cast<const void*>(int8EncodeKernel<NativeElem<float>, true, false>),
        reinterpret_cast<const void*>(int8EncodeKernel<NativeElem<float>, false, false>),
        reinterpret_cast<const void*>(int8EncodeKernel<HalfElem, true, false>),
        reinterpret_cast<const void*>(int8EncodeKernel<HalfElem, false, false>),
        reinterpret_cast<const void*>(int8EncodeKernel<Bf16Elem, true, false>),
        reinterpret_cast<const void*>(int8EncodeKernel<Bf16Elem, false, false>),
        reinterpret_cast<const void*>(int8EncodeKernel<NativeElem<float>, true, true>),
        reinterpret_cast<const void*>(int8EncodeKernel<NativeElem<float>, false, true>),
        reinterpret_cast<const void*>(int8EncodeKernel<HalfElem, true, true>),
        reinterpret_cast<const void*>(int8EncodeKernel<HalfElem, false, true>),
        reinterpret_cast<const void*>(int8EncodeKernel<Bf16Elem, true, true>),
        reinterpret_cast<const void*>(int8EncodeKernel<Bf16Elem, false, true>),
        reinterpret_cast<const void*>(int8DecodeKernel<NativeElem<float>, true>),
        reinterpret_cast<const void*>(int8DecodeKernel<NativeElem<float>, false>),
        reinterpret_cast<const void*>(int8DecodeKernel<HalfElem, true>),
        reinterpret_cast<const void*>(int8DecodeKernel<HalfElem, false>),
        reinterpret_cast<const void*>(int8DecodeKernel<Bf16Elem, true>),
        reinterpret_cast<const void*>(int8DecodeKernel<Bf16Elem, false>),
        reinterpret_cast<const void*>(int8DecodeAccumulateKernel<true>),
        reinterpret_cast<const void*>(int8DecodeAccumulateKernel<false>),
        reinterpret_cast<const void*>(int8DecodeSumKernel<true>),
        reinterpret_cast<const void*>(int8DecodeSumKernel<false>)}) {
    const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

size_t int8EncodedBytes(size_t n, const CodecConfig& config) {
  return layoutFor(n, config).blocks * sizeof(float) + n;
}

namespace {

/// Launches the encode kernel for `source` (quads when every pointer allows).
template <typename E, bool kFeedback>
cudaError_t launchEncode(EncodeSource<E, kFeedback> source, const Layout& layout, void* dst,
                         const CodecConfig& config, uint64_t key, uint64_t firstIndex,
                         cudaStream_t stream) {
  auto* out = static_cast<unsigned char*>(dst);
  const unsigned grid = gridFor(layout.blocks, kWarpsPerBlock);
  const bool quads = quadAligned(layout.block, {{source.src, 4 * sizeof(typename E::Storage)},
                                                {dst, 4},
                                                {kFeedback ? source.residual : nullptr, 16}});
  if (quads) {
    int8EncodeKernel<E, true, kFeedback>
        <<<grid, kThreads, 0, stream>>>(source, layout, out, config.stochastic, key, firstIndex);
  } else {
    int8EncodeKernel<E, false, kFeedback>
        <<<grid, kThreads, 0, stream>>>(source, layout, out, config.stochastic, key, firstIndex);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchInt8Encode(const void* src, DataType type, size_t n, void* dst,
                             const CodecConfig& config, const EncodeContext& context,
                             cudaStream_t stream) {
  return launchInt8EncodeWithFeedback(src, type, n, nullptr, dst, config, context, stream);
}

cudaError_t launchInt8EncodeWithFeedback(const void* src, DataType type, size_t n, float* residual,
                                         void* dst, const CodecConfig& config,
                                         const EncodeContext& context, cudaStream_t stream) {
  if (config.block == 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const Layout layout = layoutFor(n, config);
  const uint64_t key = streamKey(config.seed, context.counter);
  return withFloatElement(type, [&](auto element) {
    using E = decltype(element);
    const auto* in = static_cast<const typename E::Storage*>(src);
    if (residual != nullptr) {
      return launchEncode(EncodeSource<E, true>{in, residual}, layout, dst, config, key,
                          context.firstIndex, stream);
    }
    return launchEncode(EncodeSource<E, false>{in, nullptr}, layout, dst, config, key,
                        context.firstIndex, stream);
  });
}

cudaError_t launchInt8DecodeAccumulate(const void* src, size_t n, const CodecConfig& config,
                                       float* acc, cudaStream_t stream) {
  if (config.block == 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const Layout layout = layoutFor(n, config);
  const auto* in = static_cast<const unsigned char*>(src);
  if (quadAligned(layout.block, {{src, 4}, {acc, 16}})) {
    int8DecodeAccumulateKernel<true>
        <<<gridFor(n / 4, kThreads), kThreads, 0, stream>>>(in, layout, acc);
  } else {
    int8DecodeAccumulateKernel<false>
        <<<gridFor(n, kThreads), kThreads, 0, stream>>>(in, layout, acc);
  }
  return cudaGetLastError();
}

cudaError_t launchInt8DecodeSum(const void* src, size_t stride, int sources, size_t n,
                                const CodecConfig& config, float* sum, cudaStream_t stream) {
  if (config.block == 0 || sources < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const Layout layout = layoutFor(n, config);
  const auto* in = static_cast<const unsigned char*>(src);
  // Every source's codes start on a 4-byte boundary when the first's do and
  // the stride keeps them there.
  if (stride % 4 == 0 && quadAligned(layout.block, {{src, 4}, {sum, 16}})) {
    int8DecodeSumKernel<true>
        <<<gridFor(n / 4, kThreads), kThreads, 0, stream>>>(in, stride, sources, layout, sum);
  } else {
    int8DecodeSumKernel<false>
        <<<gridFor(n, kThreads), kThreads, 0, stream>>>(in, stride, sources, layout, sum);
  }
  return cudaGetLastError();
}

cudaError_t launchInt8Decode(const void* src, size_t n, const CodecConfig& config, DataType type,
                             void* out, cudaStream_t stream) {
  if (config.block == 0) return cudaErrorInvalidValue;
  const Layout layout = layoutFor(n, config);
  return withFloatElement(type, [&](auto element) -> cudaError_t {
    using E = decltype(element);
    if (n == 0) return cudaSuccess;
    using Storage = typename E::Storage;
    const auto* in = static_cast<const unsigned char*>(src);
    auto* values = static_cast<Storage*>(out);
    if (quadAligned(layout.block, {{src, 4}, {out, 4 * sizeof(Storage)}})) {
      int8DecodeKernel<E, true>
          <<<gridFor(n / 4, kThreads), kThreads, 0, stream>>>(in, layout, values);
    } else {
      int8DecodeKernel<E, false><<<gridFor(n, kThreads), kThreads, 0, stream>>>(in, layout, values);
    }
    return cudaGetLastError();
  });
}

}  // namespace loom::cuda
