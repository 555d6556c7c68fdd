// Block-wise int8 codec: error bounds, sizes, corner values, types, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/int8_codec.h"
#include "core/error.h"
#include "math/half.h"

namespace loom {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::unique_ptr<Codec> int8Codec(uint32_t block, bool stochastic = false, uint64_t seed = 0) {
  CodecConfig c;
  c.kind = CodecKind::Int8;
  c.block = block;
  c.stochastic = stochastic;
  c.seed = seed;
  return makeCodec(c);
}

std::vector<uint8_t> encode(const Codec& codec, const std::vector<float>& x,
                            EncodeContext ctx = {}) {
  std::vector<uint8_t> bytes(codec.encodedBytes(x.size()));
  const size_t written =
      codec.encode(x.data(), DataType::Float32, x.size(), bytes.data(), bytes.size(), ctx);
  EXPECT_EQ(written, bytes.size());
  return bytes;
}

std::vector<float> decode(const Codec& codec, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -1.0f);
  codec.decode(bytes.data(), bytes.size(), n, DataType::Float32, out.data());
  return out;
}

std::vector<float> normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

float blockAbsmax(const std::vector<float>& x, size_t b, size_t block) {
  float m = 0;
  for (size_t i = b * block; i < std::min(x.size(), (b + 1) * block); ++i) {
    m = std::max(m, std::fabs(x[i]));
  }
  return m;
}

// |decoded - x| <= steps * absmax / 127 per element, plus float rounding: a few
// ulps relative, and one denormal ulp times 127 for a denormal scale.
void expectWithinSteps(const std::vector<float>& x, const std::vector<float>& d, size_t block,
                       double steps) {
  ASSERT_EQ(x.size(), d.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double step = blockAbsmax(x, i / block, block) / 127.0;
    const double bound = steps * step * (1 + 1e-6) + 127 * 0x1p-149;
    ASSERT_LE(std::fabs(static_cast<double>(d[i]) - x[i]), bound)
        << "i=" << i << " x=" << x[i] << " decoded=" << d[i];
  }
}

TEST(CodecInt8, SizeIsExact) {
  auto codec = int8Codec(128);
  EXPECT_EQ(codec->encodedBytes(0), 0u);
  EXPECT_EQ(codec->encodedBytes(1), 5u);
  EXPECT_EQ(codec->encodedBytes(128), 132u);
  EXPECT_EQ(codec->encodedBytes(129), 137u);
  EXPECT_EQ(codec->encodedBytes(1000), 8u * 4 + 1000);
}

TEST(CodecInt8, RoundTripWithinHalfStep) {
  for (uint32_t block : {8u, 32u, 64u, 128u, 256u, 512u}) {
    for (size_t n : {1ul, 7ul, 127ul, 128ul, 129ul, 1000ul, 4099ul}) {
      auto codec = int8Codec(block);
      const std::vector<float> x = normal(n, static_cast<uint32_t>(n + block));
      expectWithinSteps(x, decode(*codec, encode(*codec, x), n), block, 0.5);
    }
  }
}

TEST(CodecInt8, AbsmaxDecodesExactlyEnoughAndCodesSaturate) {
  // The element that sets the scale is +-127 steps: it decodes to within float
  // rounding of itself, never beyond it by a step.
  auto codec = int8Codec(8);
  const std::vector<float> x = {3.0f, -7.5f, 0.1f, 7.5f, 0, 0, 0, -1e-30f};
  const std::vector<float> d = decode(*codec, encode(*codec, x), x.size());
  EXPECT_NEAR(d[1], -7.5f, 1e-5);
  EXPECT_NEAR(d[3], 7.5f, 1e-5);
  EXPECT_EQ(d[4], 0.0f);
}

TEST(CodecInt8, EmptyAndSingle) {
  auto codec = int8Codec(64);
  std::vector<float> none;
  EXPECT_EQ(codec->encode(none.data(), DataType::Float32, 0, nullptr, 0), 0u);
  codec->decode(nullptr, 0, 0, DataType::Float32, nullptr);
  codec->decodeAccumulate(nullptr, 0, 0, nullptr);

  const std::vector<float> one = {-0.3f};
  const std::vector<float> d = decode(*codec, encode(*codec, one), 1);
  EXPECT_NEAR(d[0], -0.3f, 1e-7);  // a lone element is its own absmax
}

TEST(CodecInt8, ZerosDecodeToZeroWithoutNaN) {
  auto codec = int8Codec(32);
  std::vector<float> x(100, 0.0f);
  x[70] = -0.0f;
  x[99] = 2.0f;  // last (short) block is not all zero
  const std::vector<uint8_t> bytes = encode(*codec, x);
  float scale0;
  std::memcpy(&scale0, bytes.data(), 4);
  EXPECT_EQ(scale0, 0.0f);
  const std::vector<float> d = decode(*codec, bytes, x.size());
  for (size_t i = 0; i < 99; ++i) EXPECT_EQ(d[i], 0.0f) << i;
  EXPECT_NEAR(d[99], 2.0f, 1e-6);
}

TEST(CodecInt8, DenormalBlocksKeepTheirPrecision) {
  auto codec = int8Codec(16);
  std::vector<float> x(48);
  const float tiny = std::numeric_limits<float>::denorm_min();
  for (size_t i = 0; i < 16; ++i) x[i] = tiny * static_cast<float>(i * 1000 + 1);  // denormals
  for (size_t i = 16; i < 32; ++i) x[i] = 1e-37f * static_cast<float>(i - 15);  // 1/inv overflows
  x[32] = tiny;                                                                 // one denormal
  x[40] = -tiny;
  const std::vector<float> d = decode(*codec, encode(*codec, x), x.size());
  for (float v : d) EXPECT_FALSE(std::isnan(v));
  expectWithinSteps(x, d, 16, 0.5);
  // A block whose absmax is the smallest denormal has scale tiny / 127, which
  // underflows to 0: the values decode to (signed) zero, an error of one
  // denormal ulp. Blocks of larger denormals keep their relative precision.
  EXPECT_EQ(d[32], 0.0f);
  EXPECT_EQ(d[40], 0.0f);
  EXPECT_NEAR(d[15] / x[15], 1.0, 1e-2);
}

TEST(CodecInt8, HugeValuesStayFinite) {
  auto codec = int8Codec(8);
  const float big = std::numeric_limits<float>::max();
  const std::vector<float> x = {big, -big, big / 3, 1.0f, 0, -big / 127, 0, 0};
  const std::vector<float> d = decode(*codec, encode(*codec, x), x.size());
  for (float v : d) EXPECT_TRUE(std::isfinite(v)) << v;
  expectWithinSteps(x, d, 8, 0.5);
}

// Decision: a block holding inf or NaN decodes to NaN everywhere in the block
// (scale NaN), other blocks are untouched, and encode does not throw.
TEST(CodecInt8, NonFiniteValuesPoisonTheirBlockOnly) {
  for (float bad : {kInf, -kInf, kNaN}) {
    auto codec = int8Codec(8);
    std::vector<float> x = normal(24, 3);
    x[10] = bad;
    const std::vector<float> d = decode(*codec, encode(*codec, x), x.size());
    for (size_t i = 8; i < 16; ++i) EXPECT_TRUE(std::isnan(d[i])) << i;
    for (size_t i : {0ul, 7ul, 16ul, 23ul}) EXPECT_TRUE(std::isfinite(d[i])) << i;

    std::vector<float> acc(24, 1.0f);
    const std::vector<uint8_t> bytes = encode(*codec, x);
    codec->decodeAccumulate(bytes.data(), bytes.size(), 24, acc.data());
    EXPECT_TRUE(std::isnan(acc[9]));
    EXPECT_TRUE(std::isfinite(acc[0]));
  }
}

TEST(CodecInt8, HalfAndBf16InputsAndOutputs) {
  auto codec = int8Codec(64);
  const std::vector<float> ref = normal(300, 11);
  std::vector<uint16_t> h(ref.size()), b(ref.size());
  std::vector<float> hf(ref.size()), bf(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    h[i] = floatToHalf(ref[i]);
    b[i] = floatToBf16(ref[i]);
    hf[i] = halfToFloat(h[i]);
    bf[i] = bf16ToFloat(b[i]);
  }
  const size_t bytes = codec->encodedBytes(ref.size());
  std::vector<uint8_t> eh(bytes), eb(bytes);
  codec->encode(h.data(), DataType::Float16, h.size(), eh.data(), bytes);
  codec->encode(b.data(), DataType::Bfloat16, b.size(), eb.data(), bytes);
  // Encoding an fp16 tensor is encoding its float values: same bytes.
  EXPECT_EQ(eh, encode(*codec, hf));
  EXPECT_EQ(eb, encode(*codec, bf));

  const std::vector<float> dh = decode(*codec, eh, hf.size());
  expectWithinSteps(hf, dh, 64, 0.5);
  // Decoding into fp16 / bf16 is decoding into float, then rounding.
  std::vector<uint16_t> oh(ref.size()), ob(ref.size());
  codec->decode(eh.data(), bytes, ref.size(), DataType::Float16, oh.data());
  codec->decode(eh.data(), bytes, ref.size(), DataType::Bfloat16, ob.data());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(oh[i], floatToHalf(dh[i]));
    EXPECT_EQ(ob[i], floatToBf16(dh[i]));
  }
}

TEST(CodecInt8, DecodeAccumulateEqualsDecodePlusAdd) {
  for (bool stochastic : {false, true}) {
    auto codec = int8Codec(128, stochastic, 9);
    const std::vector<float> x = normal(1000, 5);
    const std::vector<float> base = normal(1000, 6, 3.0f);
    const std::vector<uint8_t> bytes = encode(*codec, x, {0, 4});
    const std::vector<float> d = decode(*codec, bytes, x.size());
    std::vector<float> acc = base;
    codec->decodeAccumulate(bytes.data(), bytes.size(), x.size(), acc.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float expect = base[i] + d[i];
      EXPECT_EQ(std::memcmp(&acc[i], &expect, 4), 0) << i;
    }
  }
}

TEST(CodecInt8, Deterministic) {
  const std::vector<float> x = normal(5000, 8);
  for (bool stochastic : {false, true}) {
    const auto a = encode(*int8Codec(256, stochastic, 77), x, {10, 3});
    const auto b = encode(*int8Codec(256, stochastic, 77), x, {10, 3});
    EXPECT_EQ(a, b);
  }
  // Nearest rounding ignores seed and counter.
  EXPECT_EQ(encode(*int8Codec(256, false, 1), x, {0, 1}),
            encode(*int8Codec(256, false, 2), x, {5, 9}));
}

// The random bits belong to (seed, counter, element index in the tensor): the
// same elements encoded as one chunk or as two block-aligned chunks (with their
// firstIndex) give the same codes; a new counter or seed gives other codes.
TEST(CodecInt8, StochasticStreamFollowsTheElementNotTheChunk) {
  auto codec = int8Codec(64, true, 123);
  const std::vector<float> x = normal(1024, 2);
  const std::vector<uint8_t> whole = encode(*codec, x, {0, 5});
  const std::vector<float> lo(x.begin(), x.begin() + 512), hi(x.begin() + 512, x.end());
  const std::vector<uint8_t> a = encode(*codec, lo, {0, 5});
  const std::vector<uint8_t> b = encode(*codec, hi, {512, 5});
  // whole = 16 scales, 1024 codes; halves = 8 scales, 512 codes each.
  EXPECT_EQ(std::memcmp(whole.data(), a.data(), 32), 0);
  EXPECT_EQ(std::memcmp(whole.data() + 32, b.data(), 32), 0);
  EXPECT_EQ(std::memcmp(whole.data() + 64, a.data() + 32, 512), 0);
  EXPECT_EQ(std::memcmp(whole.data() + 64 + 512, b.data() + 32, 512), 0);

  EXPECT_NE(whole, encode(*codec, x, {0, 6}));
  EXPECT_NE(whole, encode(*int8Codec(64, true, 124), x, {0, 5}));
}

TEST(CodecInt8, StochasticWithinOneStepAndUnbiased) {
  constexpr size_t kN = 256;
  constexpr int kTrials = 2000;
  const std::vector<float> x = normal(kN, 21);
  std::vector<double> mean(kN, 0.0);
  for (int t = 0; t < kTrials; ++t) {
    auto codec = int8Codec(64, true, 1000 + t);
    const std::vector<float> d = decode(*codec, encode(*codec, x, {0, 0}), kN);
    expectWithinSteps(x, d, 64, 1.0);
    for (size_t i = 0; i < kN; ++i) mean[i] += d[i];
  }
  // Each trial's error is bounded by one step and has variance <= step^2 / 4,
  // so the mean over 2000 seeds is within 6 sigma = 6 * step / 2 / sqrt(2000).
  double nearestErr = 0, stochasticErr = 0;
  auto nearest = int8Codec(64);
  const std::vector<float> dn = decode(*nearest, encode(*nearest, x), kN);
  for (size_t i = 0; i < kN; ++i) {
    const double step = blockAbsmax(x, i / 64, 64) / 127.0;
    const double bias = mean[i] / kTrials - x[i];
    EXPECT_LE(std::fabs(bias), 6 * step / 2 / std::sqrt(double(kTrials))) << i;
    stochasticErr += std::fabs(bias);
    nearestErr += std::fabs(dn[i] - x[i]);
  }
  // Averaging removes most of the error nearest rounding leaves in place.
  EXPECT_LT(stochasticErr, nearestErr / 5);
}

TEST(CodecInt8, RejectsBadSizesAndTypes) {
  auto codec = int8Codec(64);
  const std::vector<float> x = normal(100, 1);
  std::vector<uint8_t> bytes(codec->encodedBytes(100));
  EXPECT_THROW(codec->encode(x.data(), DataType::Float32, 100, bytes.data(), bytes.size() - 1),
               Error);
  EXPECT_THROW(codec->encode(x.data(), DataType::Int32, 100, bytes.data(), bytes.size()), Error);
  EXPECT_THROW(codec->encode(x.data(), DataType::Float64, 100, bytes.data(), bytes.size()), Error);
  codec->encode(x.data(), DataType::Float32, 100, bytes.data(), bytes.size());
  std::vector<float> out(100);
  EXPECT_THROW(codec->decode(bytes.data(), bytes.size() - 1, 100, DataType::Float32, out.data()),
               Error);
  EXPECT_THROW(codec->decode(bytes.data(), bytes.size(), 99, DataType::Float32, out.data()), Error);
  EXPECT_THROW(codec->decode(bytes.data(), bytes.size(), 100, DataType::Int8, out.data()), Error);
  EXPECT_THROW(codec->decodeAccumulate(bytes.data(), bytes.size() + 1, 100, out.data()), Error);
}

}  // namespace
}  // namespace loom
