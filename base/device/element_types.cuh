// Device element types: how a stored element becomes the value the shared
// host/device math computes on. Header-only CUDA; used by the kernels in
// collectives/cuda and compression/cuda, the one place a DataType's storage and
// compute types are spelled for the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "core/types.h"
#include "math/half.h"

namespace loom::cuda {

// How a stored element becomes the value the shared math computes on. 16-bit
// floats widen to float and round back once, exactly as the host reducers do
// (math/reduce_kernels.h), so each element is rounded once on both sides.

template <typename T>
struct NativeElem {
  using Storage = T;
  using Compute = T;
  LOOM_HD static T widen(T v) { return v; }
  LOOM_HD static T narrow(T v) { return v; }
};

struct HalfElem {
  using Storage = uint16_t;
  using Compute = float;
  LOOM_HD static float widen(uint16_t v) { return halfToFloat(v); }
  LOOM_HD static uint16_t narrow(float v) { return floatToHalf(v); }
};

struct Bf16Elem {
  using Storage = uint16_t;
  using Compute = float;
  LOOM_HD static float widen(uint16_t v) { return bf16ToFloat(v); }
  LOOM_HD static uint16_t narrow(float v) { return floatToBf16(v); }
};

/// The device element type of a host element tag (core/types.h).
template <typename Tag>
struct ElemOf {
  using type = NativeElem<typename Tag::Storage>;
};
template <>
struct ElemOf<element::Half> {
  using type = HalfElem;
};
template <>
struct ElemOf<element::Bf16> {
  using type = Bf16Elem;
};

/// fn(E{}) with E the device element type of `type`; cudaErrorInvalidValue
/// for a value outside DataType.
template <typename Fn>
cudaError_t withElement(DataType type, Fn&& fn) {
  return visitDataType(
      type, [&](auto tag) { return fn(typename ElemOf<decltype(tag)>::type{}); },
      cudaErrorInvalidValue);
}

}  // namespace loom::cuda
