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

}  // namespace loom::gpu_test
