// AdamW against a scalar reference written out here, and the held-element
// replay used with sparse (top-k) gradients.
#include "optim/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace loom::train {
namespace {

constexpr float kLr = 0.01f;

/// The textbook AdamW update for one element, step by step.
struct ReferenceAdam {
  AdamWConfig c;
  float m = 0, v = 0;
  int t = 0;
  void step(float& w, float g, bool decay) {
    ++t;
    m = c.beta1 * m + (1 - c.beta1) * g;
    v = c.beta2 * v + (1 - c.beta2) * g * g;
    const float mHat = m / (1 - std::pow(c.beta1, static_cast<float>(t)));
    const float vHat = v / (1 - std::pow(c.beta2, static_cast<float>(t)));
    w -= kLr * (mHat / (std::sqrt(vHat) + c.eps) + (decay ? c.weightDecay : 0.0f) * w);
  }
};

ParamStore storeOf(int elements, bool decay) {
  ParamSpec spec;
  spec.name = "w";
  spec.cols = elements;
  spec.init = Init::kOnes;
  spec.decay = decay;
  ParamStore store({{spec}}, 0, 1, 1);
  store.initialize(1);
  return store;
}

float gradientAt(int element, int step) {
  return std::sin(0.7f * static_cast<float>(element + 1) + 1.3f * static_cast<float>(step));
}

TEST(AdamW, MatchesTheReferenceStepByStep) {
  for (const bool decay : {false, true}) {
    ParamStore store = storeOf(5, decay);
    AdamW adam(store, {{0, store.size()}}, AdamWConfig{});
    std::vector<ReferenceAdam> reference(5);
    std::vector<float> w(5, 1.0f);
    for (int step = 0; step < 30; ++step) {
      for (int i = 0; i < 5; ++i) store.grads()[i] = gradientAt(i, step);
      adam.step(store, kLr, 0.5f);  // the clip factor scales every gradient
      for (int i = 0; i < 5; ++i) {
        reference[i].step(w[i], 0.5f * gradientAt(i, step), decay);
        ASSERT_NEAR(store.values()[i], w[i], 1e-6f) << "element " << i << " step " << step;
      }
    }
  }
}

TEST(AdamW, ZeroGradientStillMovesWithoutHolding) {
  ParamStore store = storeOf(1, false);
  AdamW adam(store, {{0, 1}}, AdamWConfig{});
  store.grads()[0] = 1.0f;
  adam.step(store, kLr, 1.0f);
  const float afterFirst = store.values()[0];
  store.grads()[0] = 0.0f;
  adam.step(store, kLr, 1.0f);  // momentum carries it on
  EXPECT_LT(store.values()[0], afterFirst);
}

TEST(AdamW, HeldElementReplaysTheStepsItMissed) {
  AdamWConfig config;
  config.holdZeroGradients = true;
  for (const int missed : {0, 1, 4, 17}) {
    ParamStore store = storeOf(2, true);
    AdamW adam(store, {{0, 2}}, config);
    ReferenceAdam dense, replayed;
    float wDense = 1.0f;
    float wReplayed = 1.0f;
    // Element 0 gets a gradient every step; element 1 after `missed` zeros.
    for (int step = 0; step < missed; ++step) {
      store.grads()[0] = gradientAt(0, step);
      store.grads()[1] = 0.0f;
      adam.step(store, kLr, 1.0f);
      dense.step(wDense, gradientAt(0, step), true);
      ASSERT_NEAR(store.values()[0], wDense, 1e-6f);
      ASSERT_EQ(store.values()[1], 1.0f) << "a held element must not move";
    }
    const float sum = 3.0f;  // what the residuals delivered at last
    store.grads()[0] = gradientAt(0, missed);
    store.grads()[1] = sum;
    adam.step(store, kLr, 1.0f);
    dense.step(wDense, gradientAt(0, missed), true);
    for (int k = 0; k <= missed; ++k) replayed.step(wReplayed, sum / (missed + 1), true);
    EXPECT_NEAR(store.values()[0], wDense, 1e-6f) << missed;
    EXPECT_NEAR(store.values()[1], wReplayed, 1e-6f) << missed;
    // After the replay the element is an ordinary one again.
    store.grads()[1] = -1.0f;
    adam.step(store, kLr, 1.0f);
    replayed.step(wReplayed, -1.0f, true);
    EXPECT_NEAR(store.values()[1], wReplayed, 1e-6f) << missed;
  }
}

TEST(AdamW, ElementThatNeverGetsAGradientStaysPut) {
  AdamWConfig config;
  config.holdZeroGradients = true;
  ParamStore store = storeOf(3, true);  // weight decay would shrink it if it ran
  AdamW adam(store, {{0, 3}}, config);
  for (int step = 0; step < 10; ++step) {
    store.grads() = {0.0f, 0.0f, 0.0f};
    adam.step(store, kLr, 1.0f);
  }
  EXPECT_EQ(store.values(), std::vector<float>(3, 1.0f));
}

}  // namespace
}  // namespace loom::train
