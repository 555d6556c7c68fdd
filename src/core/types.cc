#include "core/types.h"

#include <array>
#include <utility>

namespace loom {
namespace {

struct TypeName {
  std::string_view name;
  DataType type;
};
// The first spelling of each type is its canonical name.
constexpr std::array<TypeName, 20> kTypeNames{{
    {"int8", DataType::Int8},       {"uint8", DataType::Uint8},
    {"int32", DataType::Int32},     {"uint32", DataType::Uint32},
    {"int64", DataType::Int64},     {"uint64", DataType::Uint64},
    {"float16", DataType::Float16}, {"float32", DataType::Float32},
    {"float64", DataType::Float64}, {"bfloat16", DataType::Bfloat16},
    {"char", DataType::Int8},       {"int", DataType::Int32},
    {"half", DataType::Float16},    {"fp16", DataType::Float16},
    {"float", DataType::Float32},   {"fp32", DataType::Float32},
    {"double", DataType::Float64},  {"fp64", DataType::Float64},
    {"bf16", DataType::Bfloat16},   {"uint", DataType::Uint32},
}};

constexpr std::array<std::pair<std::string_view, ReduceOp>, 5> kOpNames{{
    {"sum", ReduceOp::Sum},
    {"prod", ReduceOp::Prod},
    {"max", ReduceOp::Max},
    {"min", ReduceOp::Min},
    {"avg", ReduceOp::Avg},
}};

}  // namespace

std::string_view dataTypeName(DataType t) {
  for (const auto& entry : kTypeNames) {
    if (entry.type == t) return entry.name;
  }
  return "unknown";
}

std::string_view reduceOpName(ReduceOp op) {
  for (const auto& [name, value] : kOpNames) {
    if (value == op) return name;
  }
  return "unknown";
}

bool parseDataType(std::string_view name, DataType* out) {
  for (const auto& entry : kTypeNames) {
    if (entry.name == name) {
      *out = entry.type;
      return true;
    }
  }
  return false;
}

bool parseReduceOp(std::string_view name, ReduceOp* out) {
  for (const auto& [n, value] : kOpNames) {
    if (n == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace loom
