// Counter-based random bits for stochastic rounding.
//
// The bits for one element are a pure function of (seed, call counter, element
// index in the tensor): no state advances, so any rank, any chunking of the
// tensor and any thread (or CUDA lane) that encodes element i in call c draws
// the same bits, and a rerun reproduces them. The construction is the usual
// "xor-shift, multiply by an odd constant" avalanche, applied to the key mixed
// with the index; the odd constants are the fractional parts of the golden
// ratio, sqrt(2) and sqrt(3) as 64-bit fixed point (nothing up our sleeve).
// tests/unit/test_codec_hash.cc checks uniformity and independence of
// neighbouring indices, which is all rounding needs.
#pragma once

#include <cstdint>

#include "math/half.h"  // LOOM_HD

namespace loom::codec {

inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
inline constexpr uint64_t kSqrt2Frac = 0x6a09e667f3bcc909ull;
inline constexpr uint64_t kSqrt3Frac = 0xbb67ae8584caa73bull;

/// Bijective 64-bit avalanche: every input bit flips about half the output bits.
LOOM_HD uint64_t mix64(uint64_t z) {
  z ^= z >> 32;
  z *= kSqrt2Frac;
  z ^= z >> 29;
  z *= kSqrt3Frac;
  z ^= z >> 32;
  return z;
}

/// Per-call key: computed once per encode, not per element.
LOOM_HD uint64_t streamKey(uint64_t seed, uint64_t counter) {
  return mix64(seed ^ mix64(counter + kGolden));
}

/// 32 random bits for element `index` under `key`. Multiplying the index by an
/// odd constant before mixing spreads consecutive indices across all 64 bits.
LOOM_HD uint32_t streamBits(uint64_t key, uint64_t index) {
  return static_cast<uint32_t>(mix64(key ^ (index * kGolden)) >> 32);
}

}  // namespace loom::codec
