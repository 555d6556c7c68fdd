#include "types.h"

#include <cstring>

#include "half.h"

namespace soak {

namespace {

template <typename T>
void store(T v, void* dst) {
  std::memcpy(dst, &v, sizeof v);
}

template <typename T>
T load(const void* src) {
  T v;
  std::memcpy(&v, src, sizeof v);
  return v;
}

}  // namespace

const char* typeName(loomDataType_t t) {
  static const char* const kNames[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                       "uint64", "fp16",  "fp32",  "fp64",   "bf16"};
  return static_cast<unsigned>(t) < loomNumTypes ? kNames[t] : "?";
}

const char* opName(loomRedOp_t op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};
  return static_cast<unsigned>(op) < loomNumOps ? kNames[op] : "?";
}

bool isFloat(loomDataType_t t) {
  return t == loomFloat16 || t == loomFloat32 || t == loomFloat64 || t == loomBfloat16;
}

bool isSigned(loomDataType_t t) {
  return isFloat(t) || t == loomInt8 || t == loomInt32 || t == loomInt64;
}

void encodeValue(loomDataType_t t, int64_t v, void* dst) {
  switch (t) {
    case loomInt8:
      return store(static_cast<int8_t>(v), dst);
    case loomUint8:
      return store(static_cast<uint8_t>(v), dst);
    case loomInt32:
      return store(static_cast<int32_t>(v), dst);
    case loomUint32:
      return store(static_cast<uint32_t>(v), dst);
    case loomInt64:
      return store(static_cast<int64_t>(v), dst);
    case loomUint64:
      return store(static_cast<uint64_t>(v), dst);
    case loomFloat16:
      return store(floatToHalf(static_cast<float>(v)), dst);
    case loomFloat32:
      return store(static_cast<float>(v), dst);
    case loomFloat64:
      return store(static_cast<double>(v), dst);
    case loomBfloat16:
      return store(floatToBf16(static_cast<float>(v)), dst);
    default:
      return;
  }
}

double decodeValue(loomDataType_t t, const void* src) {
  switch (t) {
    case loomInt8:
      return load<int8_t>(src);
    case loomUint8:
      return load<uint8_t>(src);
    case loomInt32:
      return load<int32_t>(src);
    case loomUint32:
      return load<uint32_t>(src);
    case loomInt64:
      return static_cast<double>(load<int64_t>(src));
    case loomUint64:
      return static_cast<double>(load<uint64_t>(src));
    case loomFloat16:
      return halfToFloat(load<uint16_t>(src));
    case loomFloat32:
      return load<float>(src);
    case loomFloat64:
      return load<double>(src);
    case loomBfloat16:
      return bf16ToFloat(load<uint16_t>(src));
    default:
      return 0;
  }
}

}  // namespace soak
