// NCCL's data types and built-in reduction ops as Loom's. The values coincide
// (loom.h keeps NCCL's numbering) except where NCCL has more: float8 types.
#pragma once

#include <loom/loom.h>
#include <nccl.h>

#include <cstddef>
#include <cstring>

namespace loom_nccl {

/// Loom's type for `type`. Throws ncclInvalidArgument for a value that is no
/// ncclDataType_t, ncclInvalidUsage for the float8 types Loom cannot reduce.
loomDataType_t toLoomType(const ncclDataType_t& type);

/// An enum argument's value as an int, read without assuming it is a declared
/// enumerator: a C caller may pass any int, and loading an out-of-range enum is
/// undefined in C++. So enum arguments travel by reference until read here.
template <typename Enum>
int enumValue(const Enum& e) {
  static_assert(sizeof(int) == sizeof(Enum));
  int value = 0;
  std::memcpy(&value, &e, sizeof(value));
  return value;
}

/// Loom's op for a built-in `op` (ncclSum .. ncclAvg); throws ncclInvalidArgument otherwise.
loomRedOp_t toLoomOp(const ncclRedOp_t& op);

/// NCCL's name for `type`, for messages ("ncclFloat32").
const char* typeName(loomDataType_t type);

}  // namespace loom_nccl
