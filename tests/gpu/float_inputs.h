// Test inputs for the codec kernels: normally distributed floats with special
// values at the start, stored as fp32, fp16 or bf16.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/types.h"
#include "math/half.h"

namespace loom::gpu_test {

/// Converts floats to `type`'s storage.
inline std::vector<unsigned char> stored(DataType type, const std::vector<float>& f) {
  std::vector<unsigned char> out(f.size() * dataTypeSize(type));
  for (size_t i = 0; i < f.size(); ++i) {
    if (type == DataType::Float32) {
      std::memcpy(out.data() + 4 * i, &f[i], 4);
    } else {
      const uint16_t h = type == DataType::Float16 ? floatToHalf(f[i]) : floatToBf16(f[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

/// n values of `type`: normal(0, 3), except a tiny block (denormals) at 0..7,
/// +inf at 9 and NaN at 17.
inline std::vector<unsigned char> values(DataType type, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = normal(rng);
  // Special blocks at the start: a tiny one (denormals) and one holding inf / NaN.
  for (size_t i = 0; i < n && i < 8; ++i) f[i] = 1e-40f * static_cast<float>(i);
  if (n > 9) f[9] = std::numeric_limits<float>::infinity();
  if (n > 17) f[17] = std::numeric_limits<float>::quiet_NaN();
  return stored(type, f);
}

/// Whether the 2- or 4-byte float `bits` of `type` is a NaN.
inline bool isNanBits(DataType type, uint32_t bits) {
  switch (type) {
    case DataType::Float16:
      return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
    case DataType::Bfloat16:
      return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0;
    default:
      return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
  }
}

/// The index of the first element of n that differs, or n. Equal means the
/// same bits, except that any two NaNs are equal: arithmetic on a NaN returns
/// the GPU's one canonical NaN where x86 keeps the operand's payload
/// (docs/cuda.md, "Bit-identity, and its one exception").
inline size_t firstDifference(DataType type, const void* a, const void* b, size_t n) {
  const size_t es = dataTypeSize(type);
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = 0, y = 0;
    std::memcpy(&x, static_cast<const char*>(a) + i * es, es);
    std::memcpy(&y, static_cast<const char*>(b) + i * es, es);
    if (x != y && !(isNanBits(type, x) && isNanBits(type, y))) return i;
  }
  return n;
}

}  // namespace loom::gpu_test
