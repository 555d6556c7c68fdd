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

constexpr size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::Int8:
    case DataType::Uint8:
      return 1;
    case DataType::Float16:
    case DataType::Bfloat16:
      return 2;
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32:
      return 4;
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64:
      return 8;
  }
  return 0;
}

constexpr bool isFloatType(DataType t) {
  return t == DataType::Float16 || t == DataType::Bfloat16 || t == DataType::Float32 ||
         t == DataType::Float64;
}

std::string_view dataTypeName(DataType t);   // "float32", "bf16", ...
std::string_view reduceOpName(ReduceOp op);  // "sum", ...

}  // namespace loom
