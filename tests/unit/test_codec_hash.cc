// The counter-based random stream behind stochastic rounding: a pure function
// of (seed, counter, index), uniform, and independent across neighbours.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "compression/counter_hash.h"

namespace loom::codec {
namespace {

TEST(CodecHash, PureFunctionOfSeedCounterIndex) {
  const uint64_t key = streamKey(42, 7);
  EXPECT_EQ(streamBits(key, 123), streamBits(streamKey(42, 7), 123));
  EXPECT_NE(streamBits(key, 123), streamBits(key, 124));
  EXPECT_NE(streamBits(key, 123), streamBits(streamKey(43, 7), 123));
  EXPECT_NE(streamBits(key, 123), streamBits(streamKey(42, 8), 123));
  // Swapping seed and counter must not give the same stream.
  EXPECT_NE(streamKey(1, 2), streamKey(2, 1));
}

// Chi-square over 256 bins of the top byte, for consecutive indices (the way
// encode walks a tensor) under a few keys; 255 degrees of freedom, p ~ 1e-6 bound.
TEST(CodecHash, TopByteIsUniform) {
  for (uint64_t counter : {0ull, 1ull, 1000000ull}) {
    std::array<int, 256> bins{};
    constexpr int kN = 1 << 18;
    const uint64_t key = streamKey(0, counter);
    for (int i = 0; i < kN; ++i) ++bins[streamBits(key, i) >> 24];
    double chi2 = 0;
    const double expect = kN / 256.0;
    for (int b : bins) chi2 += (b - expect) * (b - expect) / expect;
    EXPECT_LT(chi2, 380.0) << "counter " << counter;
  }
}

// Each output bit is set half of the time, and neighbouring indices agree on a
// bit half of the time (no correlation that would bias neighbouring roundings).
TEST(CodecHash, BitsBalancedAndNeighboursIndependent) {
  constexpr int kN = 1 << 16;
  const uint64_t key = streamKey(5, 0);
  std::array<int, 32> ones{};
  std::array<int, 32> agree{};
  uint32_t prev = streamBits(key, 0);
  for (int i = 1; i <= kN; ++i) {
    const uint32_t r = streamBits(key, i);
    for (int b = 0; b < 32; ++b) {
      ones[b] += (r >> b) & 1;
      agree[b] += ((r ^ prev) >> b & 1) == 0;
    }
    prev = r;
  }
  const double sigma = std::sqrt(kN / 4.0);
  for (int b = 0; b < 32; ++b) {
    EXPECT_LT(std::abs(ones[b] - kN / 2.0), 6 * sigma) << "bit " << b;
    EXPECT_LT(std::abs(agree[b] - kN / 2.0), 6 * sigma) << "bit " << b;
  }
}

}  // namespace
}  // namespace loom::codec
