// Top-k codec: exactly the k largest magnitudes kept (checked against a brute
// force sort written here), deterministic ties, corner counts and values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/topk_codec.h"
#include "compression/topk_math.h"
#include "core/error.h"
#include "math/half.h"

namespace loom {
namespace {

std::unique_ptr<TopkCodec> topk(double ratio) {
  CodecConfig c;
  c.kind = CodecKind::Topk;
  c.ratio = ratio;
  return std::make_unique<TopkCodec>(c);
}

std::vector<uint8_t> encode(const Codec& codec, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(codec.encodedBytes(x.size()));
  bytes.resize(codec.encode(x.data(), DataType::Float32, x.size(), bytes.data(), bytes.size(), {}));
  return bytes;
}

std::vector<float> decode(const Codec& codec, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -1.0f);
  codec.decode(bytes.data(), bytes.size(), n, DataType::Float32, out.data());
  return out;
}

// Brute force: sort all indices by (|x| descending with NaN largest, index
// ascending), take k, return them ascending.
std::vector<uint32_t> bruteTopk(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    const bool nanA = std::isnan(x[a]), nanB = std::isnan(x[b]);
    if (nanA || nanB) return nanA && nanB ? a < b : nanA;
    const float ra = std::fabs(x[a]), rb = std::fabs(x[b]);
    if (ra != rb) return ra > rb;
    return a < b;
  });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<uint32_t> keptIndices(const std::vector<uint8_t>& bytes) {
  uint32_t count;
  std::memcpy(&count, bytes.data(), 4);
  std::vector<uint32_t> idx(count);
  if (count > 0) std::memcpy(idx.data(), bytes.data() + 4, 4 * count);
  return idx;
}

TEST(CodecTopk, KeptCount) {
  EXPECT_EQ(codec::topkKeptCount(0, 0.01), 0u);
  EXPECT_EQ(codec::topkKeptCount(1, 0.01), 1u);
  EXPECT_EQ(codec::topkKeptCount(99, 0.01), 1u);
  EXPECT_EQ(codec::topkKeptCount(101, 0.01), 2u);
  EXPECT_EQ(codec::topkKeptCount(3, 1.0), 3u);
  EXPECT_EQ(codec::topkKeptCount(10, 0.25), 3u);
  for (size_t n = 1; n <= 20000; ++n) {
    ASSERT_EQ(codec::topkKeptCount(n, 0.01), std::max<size_t>(1, (n + 99) / 100)) << n;
    ASSERT_EQ(codec::topkKeptCount(n, 0.1), std::max<size_t>(1, (n + 9) / 10)) << n;
  }
  EXPECT_EQ(topk(0.01)->encodedBytes(1000), 4u + 10 * 8);
}

TEST(CodecTopk, KeepsExactlyTheLargestMagnitudes) {
  std::mt19937 rng(1);
  std::student_t_distribution<float> heavy(2.0f);
  for (double ratio : {0.001, 0.01, 0.1, 0.5}) {
    for (size_t n : {1ul, 2ul, 50ul, 1000ul, 4096ul, 100003ul}) {
      std::vector<float> x(n);
      for (float& v : x) v = heavy(rng);
      auto codec = topk(ratio);
      const std::vector<uint8_t> bytes = encode(*codec, x);
      const size_t k = codec->keptCount(n);
      ASSERT_EQ(bytes.size(), codec->encodedBytes(n));
      ASSERT_EQ(keptIndices(bytes), bruteTopk(x, k)) << "n=" << n << " ratio=" << ratio;
      const std::vector<float> d = decode(*codec, bytes, n);
      std::vector<bool> kept(n);
      for (uint32_t i : keptIndices(bytes)) kept[i] = true;
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(d[i], kept[i] ? x[i] : 0.0f) << i;
    }
  }
}

// Ties are broken by lower index, also across the radix passes: values that
// share high bits but differ in the lowest mantissa bits.
TEST(CodecTopk, TiesGoToLowerIndices) {
  std::vector<float> x(1000, 1.0f);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = -1.0f;  // same magnitude, other sign
  auto codec = topk(0.01);
  EXPECT_EQ(keptIndices(encode(*codec, x)), bruteTopk(x, 10));
  EXPECT_EQ(keptIndices(encode(*codec, x))[9], 9u);

  std::mt19937 rng(4);
  std::vector<float> y(5000);
  for (float& v : y) v = std::nextafter(1.0f, 2.0f) * static_cast<float>(rng() % 4 + 1);
  for (size_t i = 0; i < y.size(); i += 7) y[i] = std::nextafter(y[i], 0.0f);
  for (double ratio : {0.01, 0.2, 0.9}) {
    auto c = topk(ratio);
    EXPECT_EQ(keptIndices(encode(*c, y)), bruteTopk(y, c->keptCount(y.size())));
  }
}

TEST(CodecTopk, CountsBelowKAndEmpty) {
  auto codec = topk(0.5);
  const std::vector<float> one = {-2.5f};
  EXPECT_EQ(decode(*codec, encode(*codec, one), 1), one);  // k = 1 = n

  auto all = topk(1.0);
  const std::vector<float> three = {0.0f, -1.0f, 3.0f};
  EXPECT_EQ(decode(*all, encode(*all, three), 3), three);

  const std::vector<float> none;
  const std::vector<uint8_t> bytes = encode(*codec, none);
  EXPECT_EQ(bytes.size(), 4u);
  EXPECT_EQ(keptIndices(bytes).size(), 0u);
  codec->decode(bytes.data(), bytes.size(), 0, DataType::Float32, nullptr);
}

TEST(CodecTopk, ZerosAndDenormals) {
  auto codec = topk(0.1);
  std::vector<float> x(100, 0.0f);
  const float tiny = std::numeric_limits<float>::denorm_min();
  x[42] = -tiny;
  x[7] = 3 * tiny;
  const std::vector<float> d = decode(*codec, encode(*codec, x), x.size());
  EXPECT_EQ(d[42], -tiny);
  EXPECT_EQ(d[7], 3 * tiny);
  // The remaining 8 slots go to zeros at the lowest indices; they decode to 0.
  EXPECT_EQ(keptIndices(encode(*codec, x)), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 42}));
  for (float v : d) EXPECT_FALSE(std::isnan(v));
}

// Decision: inf and NaN rank above every finite value, so they are always kept
// and reach the sum, where a loss scaler sees them.
TEST(CodecTopk, NonFiniteValuesAreKeptFirst) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[5] = -std::numeric_limits<float>::infinity();
  auto codec = topk(0.003);  // k = 3
  const std::vector<uint8_t> bytes = encode(*codec, x);
  EXPECT_EQ(keptIndices(bytes), (std::vector<uint32_t>{3, 5, 999}));
  const std::vector<float> d = decode(*codec, bytes, x.size());
  EXPECT_TRUE(std::isnan(d[3]));
  EXPECT_EQ(d[5], -std::numeric_limits<float>::infinity());
}

TEST(CodecTopk, HalfAndBf16) {
  std::mt19937 rng(9);
  std::normal_distribution<float> dist;
  std::vector<uint16_t> h(777), b(777);
  std::vector<float> hf(777), bf(777);
  for (size_t i = 0; i < h.size(); ++i) {
    h[i] = floatToHalf(dist(rng));
    b[i] = floatToBf16(dist(rng));
    hf[i] = halfToFloat(h[i]);
    bf[i] = bf16ToFloat(b[i]);
  }
  auto codec = topk(0.05);
  std::vector<uint8_t> eh(codec->encodedBytes(777)), eb(eh.size());
  codec->encode(h.data(), DataType::Float16, 777, eh.data(), eh.size());
  codec->encode(b.data(), DataType::Bfloat16, 777, eb.data(), eb.size());
  EXPECT_EQ(eh, encode(*codec, hf));
  EXPECT_EQ(eb, encode(*codec, bf));
  std::vector<uint16_t> out(777);
  codec->decode(eh.data(), eh.size(), 777, DataType::Float16, out.data());
  const std::vector<float> d = decode(*codec, eh, 777);
  for (size_t i = 0; i < 777; ++i) EXPECT_EQ(out[i], d[i] == 0 ? 0 : h[i]);
}

TEST(CodecTopk, DecodeAccumulateEqualsDecodePlusAdd) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<float> x(3000), base(3000);
  for (float& v : x) v = dist(rng);
  for (float& v : base) v = dist(rng);
  auto codec = topk(0.02);
  const std::vector<uint8_t> bytes = encode(*codec, x);
  const std::vector<float> d = decode(*codec, bytes, x.size());
  std::vector<float> acc = base;
  codec->decodeAccumulate(bytes.data(), bytes.size(), x.size(), acc.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(acc[i], base[i] + d[i]) << i;
}

TEST(CodecTopk, Deterministic) {
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * (i % 13);
  EXPECT_EQ(encode(*topk(0.01), x), encode(*topk(0.01), x));
}

TEST(CodecTopk, RejectsCorruptBytes) {
  auto codec = topk(0.01);
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17);
  const std::vector<uint8_t> good = encode(*codec, x);
  std::vector<float> out(1000);
  auto decodeBytes = [&](const std::vector<uint8_t>& b, size_t n) {
    codec->decode(b.data(), b.size(), n, DataType::Float32, out.data());
  };
  EXPECT_NO_THROW(decodeBytes(good, 1000));
  EXPECT_THROW(decodeBytes(std::vector<uint8_t>(3), 1000), Error);  // no header
  std::vector<uint8_t> b = good;
  b.pop_back();
  EXPECT_THROW(decodeBytes(b, 1000), Error);  // size disagrees with count
  b = good;
  const uint32_t big = 2000;
  std::memcpy(b.data(), &big, 4);
  EXPECT_THROW(decodeBytes(b, 1000), Error);  // count > n
  b = good;
  const uint32_t outside = 1000;
  std::memcpy(b.data() + 4 + 9 * 4, &outside, 4);
  EXPECT_THROW(decodeBytes(b, 1000), Error);  // index out of range
  b = good;
  std::memcpy(b.data() + 4 + 4, b.data() + 4, 4);
  EXPECT_THROW(decodeBytes(b, 1000), Error);  // duplicate index
  EXPECT_THROW(codec->decodeAccumulate(b.data(), b.size(), 1000, out.data()), Error);
  std::vector<uint8_t> room(codec->encodedBytes(1000) - 1);
  EXPECT_THROW(codec->encode(x.data(), DataType::Float32, 1000, room.data(), room.size()), Error);
}

}  // namespace
}  // namespace loom
