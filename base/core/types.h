// Data types and reduction operators. Values equal loom.h's (and NCCL's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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

/// fn(tag) with the element tag of `t`, or `fallback` for a value outside
/// DataType: the one place that maps a DataType to a type.
template <typename Result, typename Fn>
constexpr Result visitDataType(DataType t, Fn&& fn, Result fallback) {
  switch (t) {
    case DataType::Int8:
      return fn(element::Native<int8_t>{});
    case DataType::Uint8:
      return fn(element::Native<uint8_t>{});
    case DataType::Int32:
      return fn(element::Native<int32_t>{});
    case DataType::Uint32:
      return fn(element::Native<uint32_t>{});
    case DataType::Int64:
      return fn(element::Native<int64_t>{});
    case DataType::Uint64:
      return fn(element::Native<uint64_t>{});
    case DataType::Float16:
      return fn(element::Half{});
    case DataType::Float32:
      return fn(element::Native<float>{});
    case DataType::Float64:
      return fn(element::Native<double>{});
    case DataType::Bfloat16:
      return fn(element::Bf16{});
  }
  return fallback;
}

constexpr size_t dataTypeSize(DataType t) {
  return visitDataType(
      t, [](auto e) { return sizeof(typename decltype(e)::Storage); }, size_t{0});
}

constexpr bool isFloatType(DataType t) {
  return t == DataType::Float16 || t == DataType::Bfloat16 || t == DataType::Float32 ||
         t == DataType::Float64;
}

std::string_view dataTypeName(DataType t);   // "float32", "bf16", ...
std::string_view reduceOpName(ReduceOp op);  // "sum", ...

}  // namespace loom
