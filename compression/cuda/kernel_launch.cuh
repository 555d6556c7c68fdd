// What the codecs' device kernels share at launch: the dispatch from a
// DataType to the element type a kernel template takes (fp32, fp16, bf16), and
// the grid size of a grid-stride loop.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "core/types.h"
#include "device/element_types.cuh"

namespace loom::cuda {

/// Blocks for `work` items at `perBlock` each, at least 1 and at most
/// kMaxCodecGrid: kernels loop over the rest, so a huge n never makes a grid
/// larger than the device can keep resident for long.
inline constexpr size_t kMaxCodecGrid = 4096;
inline unsigned gridFor(size_t work, size_t perBlock) {
  const size_t g = (work + perBlock - 1) / perBlock;
  return static_cast<unsigned>(g == 0 ? 1 : (g < kMaxCodecGrid ? g : kMaxCodecGrid));
}

/// Calls fn(E{}) with E the element type of `type`; cudaErrorInvalidValue for
/// a type the codecs do not encode.
template <typename Fn>
cudaError_t withFloatElement(DataType type, Fn&& fn) {
  return withElement(type, [&](auto elem) -> cudaError_t {
    using E = decltype(elem);
    if constexpr (std::is_same_v<E, NativeElem<float>> || std::is_same_v<E, HalfElem> ||
                  std::is_same_v<E, Bf16Elem>) {
      return fn(elem);
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace loom::cuda
