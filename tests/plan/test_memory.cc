// Memory arithmetic against hand-worked figures (ZeRO: 2 + 2 + 12 bytes per
// parameter; Korthikanti et al.: s*b*h*(10 + 24/t) + 5*a*s^2*b/t per layer)
// and against loom-train's own measured peaks.
#include <gtest/gtest.h>

#include "memory_model.h"
#include "model_shape.h"
#include "stage_shape.h"

namespace loom::plan {
namespace {

Layout gpt3Published() {
  Layout l{16, 8, 8, 1};
  return l;
}

TEST(PlanMemory, Gpt3ParametersPerGpuByHand) {
  const ModelShape m = presetNamed("gpt3-175b");
  // Per layer on a TP rank: (12h^2 + 7h)/8 split + 6h whole, h = 12288.
  EXPECT_DOUBLE_EQ(layerParamsPerRank(m, 8), 226576896.0);
  // Stage 0: 12 layers + token embedding / 8 + positions 2048 x 12288.
  EXPECT_DOUBLE_EQ(stageParams(m, gpt3Published(), 0), 2822731776.0);
  // Last stage: 12 layers + its copy of the token embedding / 8 + final norm 2h.
  EXPECT_DOUBLE_EQ(stageParams(m, gpt3Published(), 7), 2797590528.0);
}

TEST(PlanMemory, ZeroPaperModelStates) {
  const ModelShape m = presetNamed("gpt3-175b");
  Layout l = gpt3Published();
  const double phi = 2822731776.0;
  MemoryBreakdown plain = memoryPerGpu(m, l);
  EXPECT_DOUBLE_EQ(plain.weights, 2 * phi);
  EXPECT_DOUBLE_EQ(plain.gradients, 2 * phi);
  EXPECT_DOUBLE_EQ(plain.optimizer, 12 * phi);
  l.zero1 = true;
  const MemoryBreakdown zero = memoryPerGpu(m, l);
  EXPECT_DOUBLE_EQ(zero.optimizer, 12 * phi / 16);  // K * phi / N_d
  EXPECT_DOUBLE_EQ(zero.weights + zero.gradients + zero.optimizer, 4.75 * phi);
}

TEST(PlanMemory, KorthikantiActivationsByHand) {
  const ModelShape m = presetNamed("gpt3-175b");
  Layout l = gpt3Published();
  // s*b*h = 25165824; (10 + 24/8) of it plus 5 * 96 * 2048^2 / 8.
  EXPECT_DOUBLE_EQ(layerActivationBytes(m, l), 578813952.0);
  // 1F1B: stage 0 holds p = 8 micro-batches of its 12 layers.
  EXPECT_DOUBLE_EQ(stageActivationBytes(m, l, 0), 96 * 578813952.0);
  l.checkpoint = true;
  // Kept inputs 2*s*b*h per layer, plus one layer's other tensors recomputed.
  EXPECT_DOUBLE_EQ(stageActivationBytes(m, l, 0), 96 * 50331648.0 + (578813952.0 - 50331648.0));
}

TEST(PlanMemory, InFlightMicroBatchesUnder1F1B) {
  EXPECT_EQ(inFlightMicroBatches(96, 0, 8), 8);
  EXPECT_EQ(inFlightMicroBatches(96, 7, 8), 1);
  EXPECT_EQ(inFlightMicroBatches(3, 0, 8), 3);
  EXPECT_EQ(layersOnStage(5, 0, 2), 3);
  EXPECT_EQ(layersOnStage(5, 1, 2), 2);
}

// Figures loom-train printed on 2026-12-06 for --layers 4 --d-model 128
// --heads 8 --seq 64 --batch 32 (docs/planner.md): parameters on rank 0 and
// its "act peak".
TEST(PlanMemory, MatchesTheTrainersMeasuredPeaks) {
  const ModelShape m = presetNamed("trainer-small");
  EXPECT_DOUBLE_EQ(totalParams(m), 834304.0);
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, Layout{1, 1, 1, 32}).activations, 88227840.0);
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, Layout{1, 2, 1, 32}).params, 439296.0);
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, Layout{1, 2, 1, 32}).activations, 54673408.0);
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, Layout{1, 1, 4, 8}).activations, 21004288.0);
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, Layout{1, 2, 2, 8}).activations, 12615680.0);
  Layout ckpt{1, 1, 1, 32};
  ckpt.checkpoint = true;
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, ckpt).activations, 25198592.0);
  Layout pipelinedCkpt{1, 1, 2, 8};
  pipelinedCkpt.checkpoint = true;
  EXPECT_DOUBLE_EQ(memoryPerGpu(m, pipelinedCkpt).activations, 6037504.0);
}

}  // namespace
}  // namespace loom::plan
