#include "optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace loom::train {

AdamW::AdamW(const ParamStore& store, const std::vector<Range>& owned, const AdamWConfig& config)
    : config_(config) {
  size_t elements = 0;
  for (const Range& r : owned) {
    for (const Param& p : store.params()) {
      const size_t begin = std::max(r.begin, p.offset);
      const size_t end = std::min(r.end, p.offset + p.size());
      if (begin < end) {
        slices_.push_back({begin, end, p.spec.decay});
        elements += end - begin;
      }
    }
  }
  m_.assign(elements, 0.0f);
  v_.assign(elements, 0.0f);
  if (config_.holdZeroGradients) held_.assign(elements, 0);
}

void AdamW::restore(State s) {
  if (s.m.size() != m_.size() || s.v.size() != v_.size() || s.held.size() != held_.size() ||
      s.steps < 0) {
    throw std::invalid_argument("optimizer state of " + std::to_string(s.m.size()) +
                                " elements does not fit this rank's " + std::to_string(m_.size()));
  }
  m_ = std::move(s.m);
  v_ = std::move(s.v);
  held_ = std::move(s.held);
  steps_ = s.steps;
}

AdamW::Corrections AdamW::corrections(int t) {
  while (static_cast<int>(corrections_.size()) < t) {
    const float n = static_cast<float>(corrections_.size() + 1);
    corrections_.push_back({1.0f - std::pow(config_.beta1, n), 1.0f - std::pow(config_.beta2, n)});
  }
  return corrections_[static_cast<size_t>(t) - 1];
}

void AdamW::update(size_t state, float& w, float grad, float lr, float decay, int t) {
  const float b1 = config_.beta1;
  const float b2 = config_.beta2;
  const Corrections c = corrections(t);
  m_[state] = b1 * m_[state] + (1.0f - b1) * grad;
  v_[state] = b2 * v_[state] + (1.0f - b2) * grad * grad;
  const float mHat = m_[state] / c.first;
  const float vHat = v_[state] / c.second;
  w -= lr * (mHat / (std::sqrt(vHat) + config_.eps) + decay * w);
}

void AdamW::step(ParamStore& store, float lr, float gradScale) {
  ++steps_;
  float* w = store.values().data();
  const float* g = store.grads().data();
  size_t state = 0;
  for (const Slice& s : slices_) {
    const float decay = s.decay ? config_.weightDecay : 0.0f;
    for (size_t i = s.begin; i < s.end; ++i, ++state) {
      float grad = g[i] * gradScale;
      if (held_.empty()) {
        update(state, w[i], grad, lr, decay, steps_);
        continue;
      }
      if (grad == 0.0f) {
        ++held_[state];
        continue;
      }
      // Replay the held steps at their own step numbers, then this one.
      const uint32_t missed = std::exchange(held_[state], 0u);
      grad /= static_cast<float>(missed + 1);
      for (uint32_t k = missed; k > 0; --k) {
        update(state, w[i], grad, lr, decay, steps_ - static_cast<int>(k));
      }
      update(state, w[i], grad, lr, decay, steps_);
    }
  }
}

}  // namespace loom::train
