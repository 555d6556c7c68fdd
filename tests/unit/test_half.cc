// fp16 / bf16 <-> float conversions, checked against references built here from
// the formats' definitions (value = significand * 2^exponent, computed in
// double), and against the compiler's _Float16 where g++ provides it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "math/half.h"

namespace loom {
namespace {

struct Format {
  int mantBits;  // stored fraction bits
  int expBits;
  int bias;
};
constexpr Format kHalf{10, 5, 15};
constexpr Format kBf16{7, 8, 127};

bool isNanBits(Format f, uint16_t v) {
  const uint32_t expMask = (1u << f.expBits) - 1;
  const uint32_t e = (v >> f.mantBits) & expMask;
  const uint32_t m = v & ((1u << f.mantBits) - 1);
  return e == expMask && m != 0;
}

// Exact value of a finite or infinite pattern, straight from the definition.
double decode(Format f, uint16_t v) {
  const uint32_t expMask = (1u << f.expBits) - 1;
  const uint32_t e = (v >> f.mantBits) & expMask;
  const uint32_t m = v & ((1u << f.mantBits) - 1);
  const double sign = (v >> 15) ? -1.0 : 1.0;
  if (e == expMask) return sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - f.bias - f.mantBits);
  return sign * std::ldexp(static_cast<double>(m | (1u << f.mantBits)),
                           static_cast<int>(e) - f.bias - f.mantBits);
}

uint32_t bitsOf(float x) { return std::bit_cast<uint32_t>(x); }
float floatOf(uint32_t u) { return std::bit_cast<float>(u); }

// Nearest representable value by search over a sorted table of every
// non-negative finite pattern; exact ties pick the even pattern; values at or
// past the midpoint above the largest finite one become infinity.
class RoundingReference {
 public:
  explicit RoundingReference(Format f) : format_(f) {
    const uint16_t inf = static_cast<uint16_t>(((1u << f.expBits) - 1) << f.mantBits);
    for (uint32_t v = 0; v < inf; ++v) values_.push_back(decode(f, static_cast<uint16_t>(v)));
    const double maxFinite = values_.back();
    const double ulp = maxFinite - values_[values_.size() - 2];
    overflow_ = maxFinite + ulp / 2;
    infBits_ = inf;
  }

  uint16_t round(float x) const {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= overflow_) return sign | infBits_;
    // First value >= a.
    const auto it = std::lower_bound(values_.begin(), values_.end(), a);
    if (it == values_.end()) return sign | static_cast<uint16_t>(values_.size() - 1);
    uint32_t hi = static_cast<uint32_t>(it - values_.begin());
    if (values_[hi] == a || hi == 0) return sign | static_cast<uint16_t>(hi);
    const uint32_t lo = hi - 1;
    const double dlo = a - values_[lo];
    const double dhi = values_[hi] - a;
    uint32_t pick = dlo < dhi ? lo : hi;
    if (dlo == dhi) pick = (lo % 2 == 0) ? lo : hi;
    return sign | static_cast<uint16_t>(pick);
  }

  const std::vector<double>& values() const { return values_; }

 private:
  Format format_;
  std::vector<double> values_;
  double overflow_ = 0;
  uint16_t infBits_ = 0;
};

TEST(Half, ToFloatExhaustive) {
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t h = static_cast<uint16_t>(v);
    const float f = halfToFloat(h);
    if (isNanBits(kHalf, h)) {
      // Sign and payload kept, quiet bit set.
      const uint32_t want = (static_cast<uint32_t>(h & 0x8000) << 16) | 0x7fc00000u |
                            (static_cast<uint32_t>(h & 0x3ff) << 13);
      ASSERT_EQ(bitsOf(f), want) << std::hex << v;
    } else {
      ASSERT_EQ(static_cast<double>(f), decode(kHalf, h)) << std::hex << v;
      ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << v;
    }
  }
}

TEST(Half, RoundTripExhaustive) {
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t h = static_cast<uint16_t>(v);
    const uint16_t want = isNanBits(kHalf, h) ? (h | 0x0200) : h;
    ASSERT_EQ(floatToHalf(halfToFloat(h)), want) << std::hex << v;
  }
}

TEST(Bf16, ToFloatExhaustive) {
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t b = static_cast<uint16_t>(v);
    const float f = bf16ToFloat(b);
    if (isNanBits(kBf16, b)) {
      ASSERT_EQ(bitsOf(f), (static_cast<uint32_t>(b) << 16) | 0x00400000u) << std::hex << v;
    } else {
      ASSERT_EQ(static_cast<double>(f), decode(kBf16, b)) << std::hex << v;
      ASSERT_EQ(std::signbit(f), (b >> 15) != 0) << std::hex << v;
    }
  }
}

TEST(Bf16, RoundTripExhaustive) {
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t b = static_cast<uint16_t>(v);
    const uint16_t want = isNanBits(kBf16, b) ? (b | 0x0040) : b;
    ASSERT_EQ(floatToBf16(bf16ToFloat(b)), want) << std::hex << v;
  }
}

// Floats worth rounding: every midpoint between neighbours (exact ties), the
// floats just either side of each, plus random bit patterns over all exponents
// and random values concentrated in the subnormal range.
std::vector<float> probeFloats(const RoundingReference& ref) {
  std::vector<float> out;
  const auto& v = ref.values();
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const float mid = static_cast<float>((v[i] + v[i + 1]) / 2);
    EXPECT_EQ(static_cast<double>(mid), (v[i] + v[i + 1]) / 2);  // exact in float
    out.push_back(mid);
    out.push_back(std::nextafter(mid, 0.0f));
    out.push_back(std::nextafter(mid, INFINITY));
    out.push_back(static_cast<float>(v[i]));
  }
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 400000; ++i) out.push_back(floatOf(any(rng)));
  std::uniform_real_distribution<float> tiny(0.0f, 1.0e-4f);
  for (int i = 0; i < 100000; ++i) out.push_back(tiny(rng));
  for (float x : {65504.0f, 65519.0f, 65519.996f, 65520.0f, 65536.0f, 1e10f, 3.0e38f, 3.3895314e38f,
                  3.4028235e38f, INFINITY, 0.0f, 1e-45f, 1.17549435e-38f, 5.9604645e-08f,
                  2.9802322e-08f, 2.9802326e-08f}) {
    out.push_back(x);
  }
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) out.push_back(-out[i]);
  return out;
}

TEST(Half, FromFloatMatchesReference) {
  const RoundingReference ref(kHalf);
  for (float x : probeFloats(ref)) {
    if (std::isnan(x)) {
      const uint16_t h = floatToHalf(x);
      ASSERT_TRUE(isNanBits(kHalf, h)) << x;
      ASSERT_EQ(h, ((bitsOf(x) >> 16) & 0x8000) | 0x7e00 | ((bitsOf(x) >> 13) & 0x3ff));
      continue;
    }
    ASSERT_EQ(floatToHalf(x), ref.round(x)) << std::hexfloat << x;
  }
}

TEST(Bf16, FromFloatMatchesReference) {
  const RoundingReference ref(kBf16);
  for (float x : probeFloats(ref)) {
    if (std::isnan(x)) {
      ASSERT_EQ(floatToBf16(x), (bitsOf(x) >> 16) | 0x0040) << std::hex << bitsOf(x);
      continue;
    }
    ASSERT_EQ(floatToBf16(x), ref.round(x)) << std::hexfloat << x;
  }
}

TEST(Half, SpotValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);    // tie with 2^16 rounds to even: inf
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);    // tie with 0 rounds to even: 0
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002);  // tie 1.5 ulp rounds to 2
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);  // tie to even (down)
  EXPECT_EQ(floatToHalf(1.0f + 0x3p-11f), 0x3c02);  // tie to even (up)
  EXPECT_EQ(halfToFloat(0x3555), 0x1.554p-2f);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(0x1.ffp127f), 0x7f80);     // tie past max bf16 (0x1.fep127): even is inf
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);  // tie to even
  EXPECT_EQ(floatToBf16(1.0f + 0x3p-8f), 0x3f82);
}

#if defined(__FLT16_MAX__)
// g++ on x86-64 implements _Float16 in software (libgcc), a second opinion.
TEST(Half, AgreesWithCompilerFloat16) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 300000; ++i) {
    const float x = floatOf(any(rng));
    if (std::isnan(x)) continue;
    const _Float16 h = static_cast<_Float16>(x);
    ASSERT_EQ(floatToHalf(x), std::bit_cast<uint16_t>(h)) << std::hexfloat << x;
  }
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t h = static_cast<uint16_t>(v);
    if (isNanBits(kHalf, h)) continue;
    ASSERT_EQ(halfToFloat(h), static_cast<float>(std::bit_cast<_Float16>(h)));
  }
}
#endif

}  // namespace
}  // namespace loom
