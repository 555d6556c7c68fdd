// Counter-based random numbers: every value is a pure function of
// (seed, stream, index), with no generator state. A parameter element gets the
// same value whichever rank initialises it and however the tensor is sharded,
// which is what makes a tensor-parallel shard equal its slice of the
// single-rank model; data sampling uses the same idea keyed by (step, sample).
#pragma once

#include <cmath>
#include <cstdint>

namespace loom::train {

/// A strong 64-bit mix (the SplitMix64 finaliser).
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr uint64_t hashKey(uint64_t seed, uint64_t stream, uint64_t index) {
  return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

/// Uniform in (0, 1): 53 random bits, never exactly 0 (safe for log).
inline double uniform01(uint64_t bits) { return (double(bits >> 11) + 0.5) * 0x1.0p-53; }

/// Standard normal for (seed, stream, index), Box-Muller over two hashed uniforms.
inline float normalAt(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t h = hashKey(seed, stream, index);
  const double u1 = uniform01(h);
  const double u2 = uniform01(mix64(h));
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

/// Uniform integer in [0, bound) for (seed, stream, index).
inline uint64_t uniformBelow(uint64_t seed, uint64_t stream, uint64_t index, uint64_t bound) {
  return static_cast<uint64_t>(uniform01(hashKey(seed, stream, index)) * double(bound)) % bound;
}

}  // namespace loom::train
