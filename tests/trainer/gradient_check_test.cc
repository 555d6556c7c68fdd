// Backward against central finite differences, for every element of every
// parameter of a tiny single-rank model.
#include <gtest/gtest.h>

#include <cmath>

#include "data/corpus.h"
#include "math/kernels.h"
#include "model/gpt_stage.h"

namespace loom::train {
namespace {

struct TinyModel {
  ModelConfig config;
  GroupComm tp;  // one rank: no communication
  std::unique_ptr<GptStage> stage;
  MicroBatch batch;
  float gradScale;

  explicit TinyModel(bool checkpoint) {
    config.layers = 2;
    config.dModel = 8;
    config.heads = 2;
    config.seq = 5;
    stage = std::make_unique<GptStage>(config, stageLayout(config.layers, 0, 1), tp, 1, checkpoint);
    stage->params().initialize(7);
    // Larger than the default init so every path (attention, GELU) is well away from linear.
    for (float& v : stage->params().values()) v *= 4.0f;
    batch = Corpus::synthetic(3, 4096).sample(3, 0, 0, 2, config.seq);
    gradScale = 1.0f / (batch.batch * config.seq);
  }
  double loss() {
    StageActivations acts;
    return stage->forward(batch, nullptr, nullptr, gradScale, acts) * gradScale;
  }
  void backward() {
    stage->params().zeroGrads();
    StageActivations acts;
    stage->forward(batch, nullptr, nullptr, gradScale, acts);
    stage->backward(batch, acts, nullptr, nullptr);
  }
};

void checkAgainstFiniteDifferences(bool checkpoint) {
  math::setThreads(1);
  TinyModel model(checkpoint);
  model.backward();
  ParamStore& store = model.stage->params();
  const std::vector<float> analytic = store.grads();
  constexpr float kStep = 1e-2f;
  for (const Param& p : store.params()) {
    double diff2 = 0, norm2 = 0;
    for (size_t i = p.offset; i < p.offset + p.size(); ++i) {
      float& w = store.values()[i];
      const float saved = w;
      w = saved + kStep;
      const double up = model.loss();
      w = saved - kStep;
      const double down = model.loss();
      w = saved;
      const double numeric = (up - down) / (2.0 * kStep);
      diff2 += (numeric - analytic[i]) * (numeric - analytic[i]);
      norm2 += double(analytic[i]) * analytic[i];
    }
    // Relative L2 error per tensor, with a floor for fp32 rounding of the loss
    // (about 1e-6 of it, divided by 2 * kStep) on tensors with tiny gradients.
    const double floor = 1e-4 * std::sqrt(static_cast<double>(p.size()));
    EXPECT_LE(std::sqrt(diff2), 2e-2 * std::sqrt(norm2) + floor)
        << p.spec.name << ": |numeric - analytic| = " << std::sqrt(diff2)
        << ", |analytic| = " << std::sqrt(norm2);
    EXPECT_GT(norm2, 0.0) << p.spec.name << " has no gradient at all";
  }
}

TEST(GradientCheck, EveryParameterMatchesFiniteDifferences) {
  checkAgainstFiniteDifferences(false);
}

TEST(GradientCheck, RecomputedBlocksGiveTheSameGradients) {
  TinyModel plain(false), checkpointed(true);
  plain.backward();
  checkpointed.backward();
  EXPECT_EQ(plain.stage->params().grads(), checkpointed.stage->params().grads());
}

}  // namespace
}  // namespace loom::train
