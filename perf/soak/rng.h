// The soak's only sources of randomness: a SplitMix64 stream and a stateless
// hash. Both are pure integer arithmetic, so every rank (any host, any libm)
// draws exactly the same operations from the same seed.
#ifndef LOOM_PERF_SOAK_RNG_H_
#define LOOM_PERF_SOAK_RNG_H_

#include <cstdint>

namespace soak {

/// SplitMix64 finaliser: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// Hash of up to three words; element values come from here so that any rank
/// can recompute any other rank's input without communicating.
inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) {
  return mix64(mix64(mix64(a) ^ (b + 0x9e3779b97f4a7c15ULL)) ^ (c + 0x632be59bd9b4e019ULL));
}

/// The shared operation stream: every rank constructs it with the same seed
/// and draws from it in the same order.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  /// Uniform in [0, n) for n >= 1 (modulo bias is irrelevant for a soak).
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

}  // namespace soak

#endif  // LOOM_PERF_SOAK_RNG_H_
