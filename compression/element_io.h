// Reading and writing fp32 / fp16 / bf16 elements as float, for the codecs'
// host loops. Each accessor is a tiny struct so the loops are instantiated per
// type and the conversion inlines (a switch per element would not vectorise).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/error.h"
#include "core/types.h"
#include "math/half.h"

namespace loom::codec {

struct LoadF32 {
  const float* p;
  float operator()(size_t i) const { return p[i]; }
};
struct LoadF16 {
  const uint16_t* p;
  float operator()(size_t i) const { return halfToFloat(p[i]); }
};
struct LoadBf16 {
  const uint16_t* p;
  float operator()(size_t i) const { return bf16ToFloat(p[i]); }
};

struct StoreF32 {
  float* p;
  void operator()(size_t i, float v) const { p[i] = v; }
};
struct StoreF16 {
  uint16_t* p;
  void operator()(size_t i, float v) const { p[i] = floatToHalf(v); }
};
struct StoreBf16 {
  uint16_t* p;
  void operator()(size_t i, float v) const { p[i] = floatToBf16(v); }
};

/// True for the element types the codecs accept.
constexpr bool isCodecType(DataType t) {
  return t == DataType::Float32 || t == DataType::Float16 || t == DataType::Bfloat16;
}

[[noreturn]] inline void raiseUnsupportedType(DataType t) {
  raise(ErrorCode::InvalidArgument, "codec: data type {} is not supported (fp32, fp16, bf16 are)",
        dataTypeName(t));
}

/// Calls fn(load) with the accessor for `type`.
template <typename Fn>
decltype(auto) withLoader(const void* p, DataType type, Fn&& fn) {
  switch (type) {
    case DataType::Float32:
      return std::forward<Fn>(fn)(LoadF32{static_cast<const float*>(p)});
    case DataType::Float16:
      return std::forward<Fn>(fn)(LoadF16{static_cast<const uint16_t*>(p)});
    case DataType::Bfloat16:
      return std::forward<Fn>(fn)(LoadBf16{static_cast<const uint16_t*>(p)});
    default:
      raiseUnsupportedType(type);
  }
}

/// Calls fn(store) with the accessor for `type`.
template <typename Fn>
decltype(auto) withStorer(void* p, DataType type, Fn&& fn) {
  switch (type) {
    case DataType::Float32:
      return std::forward<Fn>(fn)(StoreF32{static_cast<float*>(p)});
    case DataType::Float16:
      return std::forward<Fn>(fn)(StoreF16{static_cast<uint16_t*>(p)});
    case DataType::Bfloat16:
      return std::forward<Fn>(fn)(StoreBf16{static_cast<uint16_t*>(p)});
    default:
      raiseUnsupportedType(type);
  }
}

}  // namespace loom::codec
