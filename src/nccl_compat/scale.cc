#include "scale.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "types.h"

namespace loom_nccl {
namespace {

// bfloat16 is the top half of a float32; rounding to nearest even on the
// dropped half, NaNs kept quiet (a NaN must not round into infinity).
float bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t floatToBf16(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

float halfToFloat(uint16_t bits) { return static_cast<float>(std::bit_cast<_Float16>(bits)); }
uint16_t floatToHalf(float value) { return std::bit_cast<uint16_t>(static_cast<_Float16>(value)); }

template <typename T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
void store(std::byte* p, T value) {
  std::memcpy(p, &value, sizeof(T));
}

template <typename T>
T multiply(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Signed overflow is undefined; unsigned wraps, as NCCL's kernels do in practice.
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T>
void scaleAs(std::byte* out, const std::byte* in, size_t count, const std::byte* scalar) {
  const T s = load<T>(scalar);
  for (size_t i = 0; i < count; ++i) {
    store<T>(out + i * sizeof(T), multiply(load<T>(in + i * sizeof(T)), s));
  }
}

template <float (*toFloat)(uint16_t), uint16_t (*fromFloat)(float)>
void scaleHalfWidth(std::byte* out, const std::byte* in, size_t count, const std::byte* scalar) {
  const float s = toFloat(load<uint16_t>(scalar));
  for (size_t i = 0; i < count; ++i) {
    store<uint16_t>(out + 2 * i, fromFloat(toFloat(load<uint16_t>(in + 2 * i)) * s));
  }
}

}  // namespace

std::unique_ptr<std::byte[]> scaledCopy(const void* input, size_t count, loomDataType_t type,
                                        const void* scalar) {
  if (count == 0) return nullptr;
  auto out = std::make_unique_for_overwrite<std::byte[]>(count * loomTypeSize(type));
  const auto* in = static_cast<const std::byte*>(input);
  const auto* s = static_cast<const std::byte*>(scalar);
  switch (type) {
    case loomInt8:
      scaleAs<int8_t>(out.get(), in, count, s);
      break;
    case loomUint8:
      scaleAs<uint8_t>(out.get(), in, count, s);
      break;
    case loomInt32:
      scaleAs<int32_t>(out.get(), in, count, s);
      break;
    case loomUint32:
      scaleAs<uint32_t>(out.get(), in, count, s);
      break;
    case loomInt64:
      scaleAs<int64_t>(out.get(), in, count, s);
      break;
    case loomUint64:
      scaleAs<uint64_t>(out.get(), in, count, s);
      break;
    case loomFloat16:
      scaleHalfWidth<halfToFloat, floatToHalf>(out.get(), in, count, s);
      break;
    case loomBfloat16:
      scaleHalfWidth<bf16ToFloat, floatToBf16>(out.get(), in, count, s);
      break;
    case loomFloat32:
      scaleAs<float>(out.get(), in, count, s);
      break;
    default:
      scaleAs<double>(out.get(), in, count, s);
      break;
  }
  return out;
}

}  // namespace loom_nccl
