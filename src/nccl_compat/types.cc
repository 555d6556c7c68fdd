#include "types.h"

#include <iterator>

#include "status.h"

namespace loom_nccl {

// The shim casts between NCCL's and Loom's enums, which is valid because their
// shared values agree.
static_assert(
    ncclInt8 == static_cast<int>(loomInt8) && ncclUint8 == static_cast<int>(loomUint8) &&
    ncclInt32 == static_cast<int>(loomInt32) && ncclUint32 == static_cast<int>(loomUint32) &&
    ncclInt64 == static_cast<int>(loomInt64) && ncclUint64 == static_cast<int>(loomUint64) &&
    ncclFloat16 == static_cast<int>(loomFloat16) && ncclFloat32 == static_cast<int>(loomFloat32) &&
    ncclFloat64 == static_cast<int>(loomFloat64) && ncclBfloat16 == static_cast<int>(loomBfloat16));
static_assert(ncclSum == static_cast<int>(loomSum) && ncclProd == static_cast<int>(loomProd) &&
              ncclMax == static_cast<int>(loomMax) && ncclMin == static_cast<int>(loomMin) &&
              ncclAvg == static_cast<int>(loomAvg) && ncclNumOps == static_cast<int>(loomNumOps));

loomDataType_t toLoomType(const ncclDataType_t& type) {
  const int value = enumValue(type);
  if (value >= 0 && value < static_cast<int>(loomNumTypes))
    return static_cast<loomDataType_t>(value);
  if (value >= static_cast<int>(loomNumTypes) && value < ncclNumTypes) {
    fail(ncclInvalidUsage,
         "datatype {} (a float8 type) is not supported by Loom; use float16, bfloat16 or float32",
         value);
  }
  fail(ncclInvalidArgument, "datatype {} is not an ncclDataType_t", value);
}

loomRedOp_t toLoomOp(const ncclRedOp_t& op) {
  const int value = enumValue(op);
  if (value < 0 || value >= ncclNumOps) {
    fail(ncclInvalidArgument, "op {} is not a built-in ncclRedOp_t", value);
  }
  return static_cast<loomRedOp_t>(value);
}

const char* typeName(loomDataType_t type) {
  static constexpr const char* kNames[] = {
      "ncclInt8",   "ncclUint8",   "ncclInt32",   "ncclUint32",  "ncclInt64",
      "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"};
  static_assert(std::size(kNames) == loomNumTypes);
  const auto index = static_cast<size_t>(type);
  return index < std::size(kNames) ? kNames[index] : "an unknown type";
}

}  // namespace loom_nccl
