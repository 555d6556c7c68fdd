#include "core/types.h"

#include <array>
#include <utility>

namespace loom {
namespace {

struct TypeName {
  std::string_view name;
  DataType type;
};
constexpr std::array<TypeName, 10> kTypeNames{{
    {"int8", DataType::Int8},
    {"uint8", DataType::Uint8},
    {"int32", DataType::Int32},
    {"uint32", DataType::Uint32},
    {"int64", DataType::Int64},
    {"uint64", DataType::Uint64},
    {"float16", DataType::Float16},
    {"float32", DataType::Float32},
    {"float64", DataType::Float64},
    {"bfloat16", DataType::Bfloat16},
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

}  // namespace loom
