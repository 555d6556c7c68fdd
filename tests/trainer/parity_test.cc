// The proof of the parallel layouts: with the same seed and global
// batch, the loss at every step matches the single-rank run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "thread_ranks.h"

namespace loom::train::testing {
namespace {

constexpr double kRelativeTolerance = 1e-4;

const std::vector<StepStats>& reference() {
  static const std::vector<StepStats> stats = trainOnThreads(tinyOptions(1, 1, 1));
  return stats;
}

void expectSameLosses(const std::vector<StepStats>& expected, const std::vector<StepStats>& got,
                      double tolerance = kRelativeTolerance) {
  ASSERT_EQ(expected.size(), got.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double rel = std::abs(got[i].loss - expected[i].loss) / std::abs(expected[i].loss);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, tolerance) << "step " << i << ": " << got[i].loss << " vs " << expected[i].loss;
  }
  std::printf("max relative loss difference over %zu steps: %.2e\n", got.size(), worst);
}

TEST(TrainerParity, SingleRankLearns) {
  const std::vector<StepStats>& ref = reference();
  EXPECT_LT(ref.back().loss, ref.front().loss - 0.5);
  EXPECT_NEAR(ref.front().loss, std::log(256.0), 0.2);  // uniform over bytes at init
}

class GridParity : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GridParity, LossMatchesSingleRankEveryStep) {
  const auto [dp, tp, pp] = GetParam();
  expectSameLosses(reference(), trainOnThreads(tinyOptions(dp, tp, pp)));
}

INSTANTIATE_TEST_SUITE_P(Grids, GridParity,
                         ::testing::Values(std::make_tuple(2, 1, 1), std::make_tuple(1, 2, 1),
                                           std::make_tuple(1, 1, 2), std::make_tuple(2, 2, 1),
                                           std::make_tuple(2, 1, 2), std::make_tuple(1, 2, 2),
                                           std::make_tuple(2, 2, 2)),
                         [](const auto& info) {
                           return "dp" + std::to_string(std::get<0>(info.param)) + "_tp" +
                                  std::to_string(std::get<1>(info.param)) + "_pp" +
                                  std::to_string(std::get<2>(info.param));
                         });

// Reducing DP buckets on the overlap worker while backward runs changes when
// they are reduced, never what: losses and gradient norms are bit-identical,
// for plain DP, ZeRO-1 across pipeline stages, and compressed gradients. Small
// buckets make several per stage, so the worker has something to start early.
TEST(TrainerParity, OverlappedDataParallelIsBitIdentical) {
  std::vector<TrainOptions> configs;
  configs.push_back(tinyOptions(2, 1, 1));
  configs.push_back(tinyOptions(2, 1, 2));
  configs.back().zero = 1;
  configs.push_back(tinyOptions(2, 2, 1));
  configs.back().compression.codec.kind = loomCompressInt8;
  double overlapped = 0;
  for (TrainOptions o : configs) {
    o.bucketElements = 2048;
    o.overlapDp = false;
    const std::vector<StepStats> serial = trainOnThreads(o);
    o.overlapDp = true;
    const std::vector<StepStats> overlap = trainOnThreads(o);
    ASSERT_EQ(serial.size(), overlap.size());
    for (size_t i = 0; i < serial.size(); ++i) {
      EXPECT_EQ(serial[i].loss, overlap[i].loss) << "step " << i;
      EXPECT_EQ(serial[i].gradNorm, overlap[i].gradNorm) << "step " << i;
      EXPECT_EQ(serial[i].dpBucketsOverlapped, 0) << "step " << i;
      overlapped += overlap[i].dpBucketsOverlapped;
    }
  }
  // Timing decides how many start early; over 30 steps of several buckets some must.
  EXPECT_GT(overlapped, 0);
  std::printf("DP buckets started while backward ran: %.0f\n", overlapped);
}

TEST(TrainerParity, AllForwardAllBackwardMatches) {
  TrainOptions o = tinyOptions(1, 1, 2);
  o.schedule = ScheduleKind::kAllForwardAllBackward;
  expectSameLosses(reference(), trainOnThreads(o));
}

TEST(TrainerParity, ThreeStagesUnevenLayersMatch) {
  TrainOptions single = tinyOptions(1, 1, 1);
  single.model.layers = 4;
  TrainOptions staged = single;
  staged.grid.pp = 3;  // layers 2 + 1 + 1
  staged.microBatches = 4;
  expectSameLosses(trainOnThreads(single), trainOnThreads(staged));
}

TEST(TrainerParity, ZeroOneMatchesPlainDataParallel) {
  TrainOptions plain = tinyOptions(2, 1, 1);
  TrainOptions zero = plain;
  zero.zero = 1;
  expectSameLosses(trainOnThreads(plain), trainOnThreads(zero));
  TrainOptions zeroGrid = tinyOptions(2, 2, 2);
  zeroGrid.zero = 1;
  expectSameLosses(reference(), trainOnThreads(zeroGrid));
}

// With top-k, ZeRO-1 reduces by the same compressed all-reduce as plain DP
// (a compressed reduce-scatter would drop part of each owner's sum), so the
// runs agree; only the gradient norm's summation order differs.
TEST(TrainerParity, ZeroOneWithTopKMatchesPlainDataParallel) {
  TrainOptions plain = tinyOptions(2, 1, 1);
  plain.steps = 30;
  plain.compression.codec.kind = loomCompressTopK;
  plain.compression.codec.ratio = 0.05;
  TrainOptions zero = plain;
  zero.zero = 1;
  expectSameLosses(trainOnThreads(plain), trainOnThreads(zero), 1e-5);
}

TEST(TrainerParity, ActivationCheckpointingMatchesAndSavesMemory) {
  TrainOptions plain = tinyOptions(1, 2, 2);
  plain.model.layers = 4;  // two blocks per stage: block activations dominate the LM head's
  TrainOptions checkpointed = plain;
  checkpointed.checkpointActivations = true;
  const std::vector<StepStats> a = trainOnThreads(plain);
  const std::vector<StepStats> b = trainOnThreads(checkpointed);
  expectSameLosses(a, b, 1e-6);
  EXPECT_LT(b.back().peakActivationBytes, 0.8 * a.back().peakActivationBytes);
}

TEST(TrainerParity, OneFOneBHoldsFewerActivationsThanAfab) {
  TrainOptions afab = tinyOptions(1, 1, 2);
  afab.microBatches = 4;
  afab.steps = 2;
  afab.schedule = ScheduleKind::kAllForwardAllBackward;
  TrainOptions oneFOneB = afab;
  oneFOneB.schedule = ScheduleKind::kOneForwardOneBackward;
  EXPECT_LT(trainOnThreads(oneFOneB).back().peakActivationBytes,
            trainOnThreads(afab).back().peakActivationBytes);
}

}  // namespace
}  // namespace loom::train::testing
