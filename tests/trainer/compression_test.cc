// Compressed data-parallel gradients (smoke version of the convergence
// benchmark in docs/trainer.md): training still works and the wire shrinks.
#include <gtest/gtest.h>

#include "thread_ranks.h"

namespace loom::train::testing {
namespace {

TrainOptions compressedOptions(loomCompressionKind_t kind, double ratio, int steps = 30) {
  TrainOptions o = tinyOptions(2, 1, 1);
  o.steps = steps;
  o.bucketElements = 1 << 16;
  o.compression.codec.kind = kind;
  o.compression.codec.ratio = ratio;
  return o;
}

TEST(CompressedTraining, Int8StaysCloseAndSendsLess) {
  const std::vector<StepStats> exact = trainOnThreads(compressedOptions(loomCompressNone, 0));
  const std::vector<StepStats> int8 = trainOnThreads(compressedOptions(loomCompressInt8, 0));
  EXPECT_LT(int8.back().loss, exact.back().loss * 1.02);
  EXPECT_LT(int8.back().dpWireBytes, 0.5 * exact.back().dpWireBytes);
}

TEST(CompressedTraining, TopKWithErrorFeedbackStillLearns) {
  const std::vector<StepStats> exact = trainOnThreads(compressedOptions(loomCompressNone, 0));
  const std::vector<StepStats> topk = trainOnThreads(compressedOptions(loomCompressTopK, 0.05));
  EXPECT_LT(topk.back().loss, topk.front().loss - 0.5);
  EXPECT_LT(topk.back().loss, exact.back().loss * 1.15);
  EXPECT_LT(topk.back().dpWireBytes, 0.5 * exact.back().dpWireBytes);
}

// Top-k 1 %: held elements replay the Adam steps they missed, after a
// dense-to-sparse warm-up. This tiny model leaves its loss plateau late, so the
// warm-up spans half the run. It ends 11 % above exact training with the
// replay and 22 % without (the 5 % target is for the demo model, a benchmark
// in docs/trainer.md).
TEST(CompressedTraining, TopKOnePercentFollowsExactTraining) {
  const std::vector<StepStats> exact = trainOnThreads(compressedOptions(loomCompressNone, 0, 300));
  TrainOptions options = compressedOptions(loomCompressTopK, 0.01, 300);
  options.compression.sparsityWarmup = 150;
  const std::vector<StepStats> topk = trainOnThreads(options);
  double sentTopk = 0, sentExact = 0;
  for (size_t i = 0; i < topk.size(); ++i) {
    sentTopk += topk[i].dpWireBytes;
    sentExact += exact[i].dpWireBytes;
  }
  EXPECT_LT(topk.back().loss, exact.back().loss * 1.16);
  EXPECT_LT(sentTopk, 0.25 * sentExact);  // measured 0.16
}

}  // namespace
}  // namespace loom::train::testing
