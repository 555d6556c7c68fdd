// Accuracy of the codecs on realistic data, for one encode/decode and for the
// two-shot all-reduce (each of N ranks encodes its contribution; the owner
// decodeAccumulates them in rank order in fp32 and encodes the sum once; every
// rank decodes that). Asserts loose ceilings so regressions fail; with
// LOOM_CODEC_REPORT=1 it prints the table in docs/compression.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "math/half.h"

namespace loom {
namespace {

constexpr size_t kN = 1 << 16;  // elements per rank

enum class Dist { Normal, StudentT3, Cauchy };
const char* distName(Dist d) {
  return d == Dist::Normal ? "normal" : d == Dist::StudentT3 ? "student-t3" : "cauchy";
}

std::vector<float> sample(Dist d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(kN);
  std::normal_distribution<float> normal;
  std::student_t_distribution<float> t3(3.0f);
  std::cauchy_distribution<float> cauchy;
  for (float& v : x)
    v = d == Dist::Normal ? normal(rng) : d == Dist::StudentT3 ? t3(rng) : cauchy(rng);
  return x;
}

struct Err {
  double meanRel;  // sum |err| / sum |exact|
  double maxRel;   // max |err| / max |exact|
};

Err measure(const std::vector<double>& exact, const std::vector<float>& got) {
  double se = 0, sx = 0, me = 0, mx = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double e = std::fabs(got[i] - exact[i]);
    se += e;
    sx += std::fabs(exact[i]);
    me = std::max(me, e);
    mx = std::max(mx, std::fabs(exact[i]));
  }
  return {se / sx, me / mx};
}

std::vector<uint8_t> enc(const Codec& c, const std::vector<float>& x, uint64_t counter) {
  std::vector<uint8_t> b(c.encodedBytes(x.size()));
  b.resize(c.encode(x.data(), DataType::Float32, x.size(), b.data(), b.size(), {0, counter}));
  return b;
}

// Two-shot all-reduce of `ranks` contributions through `codec`.
Err twoShot(const Codec& codec, Dist d, int ranks) {
  std::vector<double> exact(kN, 0.0);
  std::vector<float> acc(kN, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<float> x = sample(d, 100 + r);
    for (size_t i = 0; i < kN; ++i) exact[i] += x[i];
    const std::vector<uint8_t> b = enc(codec, x, r);  // counter differs per rank's encode
    codec.decodeAccumulate(b.data(), b.size(), kN, acc.data());
  }
  if (ranks == 1) {  // a single encode/decode: no second shot
    return measure(exact, acc);
  }
  const std::vector<uint8_t> b = enc(codec, acc, 1000);
  std::vector<float> out(kN);
  codec.decode(b.data(), b.size(), kN, DataType::Float32, out.data());
  return measure(exact, out);
}

// Ring reduce-scatter with re-encoding at every hop, then the owner's encode.
Err ring(const Codec& codec, Dist d, int ranks) {
  std::vector<double> exact(kN, 0.0);
  std::vector<float> partial(kN, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<float> x = sample(d, 100 + r);
    for (size_t i = 0; i < kN; ++i) exact[i] += x[i];
    std::vector<float> next = x;
    if (r > 0) {
      const std::vector<uint8_t> b = enc(codec, partial, r);
      codec.decodeAccumulate(b.data(), b.size(), kN, next.data());
    }
    partial = next;
  }
  const std::vector<uint8_t> b = enc(codec, partial, 1000);
  std::vector<float> out(kN);
  codec.decode(b.data(), b.size(), kN, DataType::Float32, out.data());
  return measure(exact, out);
}

bool report() { return std::getenv("LOOM_CODEC_REPORT") != nullptr; }

TEST(CodecAccuracy, Int8TwoShot) {
  for (const char* text : {"int8:block=32", "int8:block=64", "int8:block=128", "int8:block=256",
                           "int8:block=512", "int8:block=256,stochastic,seed=1"}) {
    auto codec = makeCodec(parseCodecConfig(text));
    for (Dist d : {Dist::Normal, Dist::StudentT3, Dist::Cauchy}) {
      std::string line = std::string(text) + " " + distName(d);
      for (int ranks : {1, 2, 4, 8, 16}) {
        const Err e = twoShot(*codec, d, ranks);
        // Per element <= 1 step per shot, and a step is <= absmax/127 of its block.
        EXPECT_LT(e.maxRel, 2.5 / 127) << line << " N=" << ranks;
        if (d == Dist::Normal) {
          EXPECT_LT(e.meanRel, 0.02) << line << " N=" << ranks;
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, " | %.2e / %.2e", e.meanRel, e.maxRel);
        line += buf;
      }
      if (report()) std::printf("%s\n", line.c_str());
    }
  }
}

TEST(CodecAccuracy, TopkTwoShot) {
  auto codec = makeCodec(parseCodecConfig("topk:0.01"));
  for (Dist d : {Dist::Normal, Dist::StudentT3, Dist::Cauchy}) {
    std::string line = std::string("topk:0.01 ") + distName(d);
    for (int ranks : {1, 2, 4, 8, 16}) {
      const Err e = twoShot(*codec, d, ranks);
      EXPECT_LT(e.meanRel, 1.0);  // never worse than sending nothing
      char buf[64];
      std::snprintf(buf, sizeof buf, " | %.2e / %.2e", e.meanRel, e.maxRel);
      line += buf;
    }
    if (report()) std::printf("%s\n", line.c_str());
  }
}

TEST(CodecAccuracy, RingReencodingForComparison) {
  auto codec = makeCodec(parseCodecConfig("int8:block=256"));
  std::string line = "ring int8:block=256 normal";
  for (int ranks : {2, 4, 8, 16}) {
    const Err e = ring(*codec, Dist::Normal, ranks);
    EXPECT_LT(e.meanRel, 0.05);
    char buf[64];
    std::snprintf(buf, sizeof buf, " | %.2e / %.2e", e.meanRel, e.maxRel);
    line += buf;
  }
  if (report()) std::printf("%s\n", line.c_str());
}

// Why the scale is fp32: gradients are small, and absmax/127 of a block of
// them falls below fp16's normal range (6.1e-5), where fp16 loses precision,
// then to zero. Prints the mean relative error of storing the scales in fp16.
TEST(CodecAccuracy, Fp16ScaleWouldLoseSmallGradients) {
  for (double sigma : {1.0, 1e-2, 1e-4, 1e-6}) {
    std::vector<float> x = sample(Dist::Normal, 7);
    double rel = 0;
    size_t blocks = 0;
    for (size_t b = 0; b < kN; b += 256, ++blocks) {
      float absmax = 0;
      for (size_t i = b; i < b + 256; ++i)
        absmax = std::max(absmax, std::fabs(x[i] * float(sigma)));
      const float scale = absmax / 127.0f;
      rel += std::fabs(halfToFloat(floatToHalf(scale)) - scale) / scale;
    }
    if (report())
      std::printf("fp16 scale, sigma %.0e: mean relative scale error %.2e\n", sigma, rel / blocks);
    if (sigma == 1e-6) {
      EXPECT_GT(rel / blocks, 0.5);
    }
  }
}

}  // namespace
}  // namespace loom
