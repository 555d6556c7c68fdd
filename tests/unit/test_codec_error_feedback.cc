// ErrorFeedback: compensate adds the residual, update keeps what the codec
// dropped, and over many steps nothing is lost, only delayed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/error_feedback.h"
#include "core/error.h"
#include "math/half.h"

namespace loom {
namespace {

std::vector<float> roundTrip(const Codec& codec, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(codec.encodedBytes(x.size()));
  const size_t used =
      codec.encode(x.data(), DataType::Float32, x.size(), bytes.data(), bytes.size());
  std::vector<float> d(x.size());
  codec.decode(bytes.data(), used, x.size(), DataType::Float32, d.data());
  return d;
}

TEST(ErrorFeedback, CompensateThenUpdate) {
  ErrorFeedback ef(4);
  std::vector<float> g = {1, 2, 3, 4};
  ef.compensate(g);
  EXPECT_EQ(g, (std::vector<float>{1, 2, 3, 4}));  // residual starts at zero
  ef.update(g, std::vector<float>{1, 0, 3, 0});
  EXPECT_EQ(std::vector<float>(ef.residual().begin(), ef.residual().end()),
            (std::vector<float>{0, 2, 0, 4}));
  std::vector<float> next = {10, 10, 10, 10};
  ef.compensate(next);
  EXPECT_EQ(next, (std::vector<float>{10, 12, 10, 14}));

  // A slice of the tensor, and an fp16 gradient compensated into fp32.
  std::vector<uint16_t> h = {floatToHalf(0.5f), floatToHalf(0.25f)};
  std::vector<float> out(2);
  ef.compensate(h.data(), DataType::Float16, out, 2);
  EXPECT_EQ(out, (std::vector<float>{0.5f, 4.25f}));
  ef.reset();
  EXPECT_EQ(ef.residual()[3], 0.0f);
}

TEST(ErrorFeedback, RejectsOutOfRange) {
  ErrorFeedback ef(4);
  std::vector<float> g(3);
  EXPECT_THROW(ef.compensate(g, 2), Error);
  EXPECT_THROW(ef.update(g, std::vector<float>(2)), Error);
  EXPECT_THROW(ef.update(g, g, 5), Error);
  EXPECT_NO_THROW(ef.compensate(g, 1));
}

TEST(ErrorFeedback, NonFiniteResidualIsDropped) {
  ErrorFeedback ef(3);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ef.update(std::vector<float>{inf, 1.0f, 2.0f}, std::vector<float>{nan, nan, 1.5f});
  EXPECT_EQ(ef.residual()[0], 0.0f);
  EXPECT_EQ(ef.residual()[1], 0.0f);
  EXPECT_EQ(ef.residual()[2], 0.5f);
}

// With topk 1% and error feedback, the sum of what was sent over T steps equals
// the sum of the true gradients minus the final residual, exactly up to float
// rounding, and the residual stays bounded.
TEST(ErrorFeedback, NothingIsLostOverSteps) {
  auto codec = makeCodec(parseCodecConfig("topk:0.01"));
  constexpr size_t kN = 2000;
  ErrorFeedback ef(kN);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<double> sent(kN, 0.0), truth(kN, 0.0);
  for (int step = 0; step < 300; ++step) {
    std::vector<float> g(kN);
    for (size_t i = 0; i < kN; ++i) truth[i] += g[i] = dist(rng);
    ef.compensate(g);
    const std::vector<float> d = roundTrip(*codec, g);
    ef.update(g, d);
    for (size_t i = 0; i < kN; ++i) sent[i] += d[i];
  }
  double maxResidual = 0;
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(sent[i] + ef.residual()[i], truth[i], 1e-3) << i;
    maxResidual = std::max(maxResidual, std::fabs(double(ef.residual()[i])));
  }
  // Without feedback 99% would be lost each step; with it, an element waits
  // until its residual is among the largest, so residuals stay O(sqrt(steps)).
  EXPECT_LT(maxResidual, 60.0);
}

}  // namespace
}  // namespace loom
