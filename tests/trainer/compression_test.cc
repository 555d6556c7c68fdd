// Compressed data-parallel gradients (smoke version of the convergence
// benchmark in docs/trainer.md): training still works and the wire shrinks.
#include <gtest/gtest.h>

#include "thread_ranks.h"

namespace loom::train::testing {
namespace {

TrainOptions compressedOptions(loomCompressionKind_t kind, double ratio) {
  TrainOptions o = tinyOptions(2, 1, 1);
  o.steps = 30;
  o.bucketElements = 1 << 16;
  o.compression.kind = kind;
  o.compression.ratio = ratio;
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

}  // namespace
}  // namespace loom::train::testing
