// Grid-stride element-wise map over device buffers with 16-byte loads and
// stores: the one loop every simple kernel (reduce, finalise, copy) is built on.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "device/element_types.cuh"

namespace loom::cuda {

// ---- The loop ----------------------------------------------------------------

inline constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over (an H100/H200 holds
// 132 SMs x 8 such blocks); larger inputs loop, so the grid never depends on a
// device query and one launch costs no extra API call.
inline constexpr size_t kMaxBlocks = 4096;

/// Blocks for `work` items of one thread each, at least 1.
inline unsigned gridFor(size_t work) {
  const size_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

template <typename S>
union Pack {
  static constexpr int kCount = 16 / sizeof(S);
  uint4 raw;
  S v[kCount];
};

/// dst[i] = f(a[i], b[i]) (Binary) or f(a[i]) for i < n. When all three
/// pointers are 16-byte aligned (cudaMalloc gives 256; chunk offsets that are
/// multiples of 16 bytes keep it) each thread moves whole 16-byte packs, the
/// widest load a thread can issue; the tail, and misaligned buffers, go one
/// element at a time. dst may equal a or b: every element is read before the
/// same thread writes it.
template <bool Binary, typename S, typename F>
__device__ __forceinline__ void mapElements(S* dst, const S* a, const S* b, size_t n, F f) {
  constexpr int kPack = Pack<S>::kCount;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) |
                         (Binary ? reinterpret_cast<uintptr_t>(b) : 0);
  const size_t packs = bits % 16 == 0 ? n / kPack : 0;
  for (size_t p = first; p < packs; p += stride) {
    Pack<S> x, y, r;
    x.raw = reinterpret_cast<const uint4*>(a)[p];
    if constexpr (Binary) y.raw = reinterpret_cast<const uint4*>(b)[p];
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      if constexpr (Binary) {
        r.v[k] = f(x.v[k], y.v[k]);
      } else {
        r.v[k] = f(x.v[k]);
      }
    }
    reinterpret_cast<uint4*>(dst)[p] = r.raw;
  }
  for (size_t i = packs * kPack + first; i < n; i += stride) {
    if constexpr (Binary) {
      dst[i] = f(a[i], b[i]);
    } else {
      dst[i] = f(a[i]);
    }
  }
}

}  // namespace loom::cuda
