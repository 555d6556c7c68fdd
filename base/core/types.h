// Data types and reduction operators. Values equal loom.h's (and NCCL's).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

namespace loom {

enum class DataType : uint8_t {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
};
inline constexpr int kNumDataTypes = 10;

enum class ReduceOp : uint8_t { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4 };
inline constexpr int kNumReduceOps = 5;

/// A DataType's elements as a type, for code generic over them: Native<T>
/// where T stores and computes itself, Half and Bf16 for the 16-bit floats,
/// stored as their bits.
namespace element {
template <typename T>
struct Native {
  using Storage = T;
};
struct Half {
  using Storage = uint16_t;
};
struct Bf16 {
  using Storage = uint16_t;
};
}  // namespace element

/// Every DataType's element tag, in the enum's order.
using ElementTags =
    std::tuple<element::Native<int8_t>, element::Native<uint8_t>, element::Native<int32_t>,
               element::Native<uint32_t>, element::Native<int64_t>, element::Native<uint64_t>,
               element::Half, element::Native<float>, element::Native<double>, element::Bf16>;
static_assert(std::tuple_size_v<ElementTags> == kNumDataTypes);

/// fn(tag) with the element tag of `t`, or `fallback` for a value outside
/// DataType: the one place that maps a DataType to a type.
template <typename Result, typename Fn, size_t kIndex = 0>
constexpr Result visitDataType(DataType t, Fn&& fn, Result fallback) {
  if constexpr (kIndex == std::tuple_size_v<ElementTags>) {
    return fallback;
  } else if (static_cast<size_t>(t) == kIndex) {
    return fn(std::tuple_element_t<kIndex, ElementTags>{});
  } else {
    return visitDataType<Result, Fn, kIndex + 1>(t, std::forward<Fn>(fn), fallback);
  }
}

namespace detail {
/// Bytes per element of each DataType, from the type list. At namespace
/// scope, so it is one table in the binary: a constexpr local indexed at run
/// time is rebuilt on the stack at every call.
inline constexpr auto kDataTypeSizes = []<size_t... kIndex>(std::index_sequence<kIndex...>) {
  return std::array<size_t, sizeof...(kIndex)>{
      sizeof(typename std::tuple_element_t<kIndex, ElementTags>::Storage)...};
}
(std::make_index_sequence<kNumDataTypes>{});
}  // namespace detail

/// Bytes per element, 0 for a value outside DataType.
constexpr size_t dataTypeSize(DataType t) {
  const auto i = static_cast<size_t>(t);
  return i < detail::kDataTypeSizes.size() ? detail::kDataTypeSizes[i] : 0;
}

constexpr bool isFloatType(DataType t) {
  return t == DataType::Float16 || t == DataType::Bfloat16 || t == DataType::Float32 ||
         t == DataType::Float64;
}

std::string_view dataTypeName(DataType t);   // "float32", "bf16", ...
std::string_view reduceOpName(ReduceOp op);  // "sum", ...

}  // namespace loom
