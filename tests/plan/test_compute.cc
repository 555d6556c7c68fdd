// FLOP counting and the pipeline bubble against the published formulas.
#include <gtest/gtest.h>

#include "compute_model.h"
#include "model_shape.h"

namespace loom::plan {
namespace {

TEST(PlanCompute, MatchesMegatronsFlopFormulaWithRecomputation) {
  const ModelShape m = presetNamed("gpt3-175b");
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double megatron = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  // Ours also counts biases and norms as parameters: a 0.1% difference at most.
  EXPECT_NEAR(modelFlopsPerStep(m, true) / megatron, 1.0, 1e-3);
  // Without recomputation: 6 instead of 8 FLOPs per parameter and token.
  const double noRecompute = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * V * h;
  EXPECT_NEAR(modelFlopsPerStep(m, false) / noRecompute, 1.0, 1e-3);
}

TEST(PlanCompute, PipelineBubble) {
  EXPECT_DOUBLE_EQ(bubbleFraction(8, 96), 7.0 / 96);
  EXPECT_DOUBLE_EQ(bubbleFraction(1, 4), 0.0);
  EXPECT_DOUBLE_EQ(bubbleFraction(64, 512), 63.0 / 512);
}

TEST(PlanCompute, StagesSplitTheWork) {
  const ModelShape m = presetNamed("gpt3-175b");
  const Layout whole{1, 1, 1, 1};
  const Layout split{1, 8, 8, 1};
  // 8 x 8 ranks share one micro-batch's layers; the head runs on the last stage only.
  double sum = 0;
  for (int stage = 0; stage < 8; ++stage) sum += 8 * stageFlopsPerMicroBatch(m, split, stage);
  EXPECT_NEAR(sum / stageFlopsPerMicroBatch(m, whole, 0), 1.0, 1e-12);
}

}  // namespace
}  // namespace loom::plan
