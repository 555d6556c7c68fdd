#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

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
}

void AdamW::step(ParamStore& store, float lr, float gradScale) {
  ++steps_;
  const float b1 = config_.beta1;
  const float b2 = config_.beta2;
  const float correction1 = 1.0f - std::pow(b1, static_cast<float>(steps_));
  const float correction2 = 1.0f - std::pow(b2, static_cast<float>(steps_));
  float* w = store.values().data();
  const float* g = store.grads().data();
  size_t state = 0;
  for (const Slice& s : slices_) {
    const float decay = s.decay ? config_.weightDecay : 0.0f;
    for (size_t i = s.begin; i < s.end; ++i, ++state) {
      const float grad = g[i] * gradScale;
      m_[state] = b1 * m_[state] + (1.0f - b1) * grad;
      v_[state] = b2 * v_[state] + (1.0f - b2) * grad * grad;
      const float mHat = m_[state] / correction1;
      const float vHat = v_[state] / correction2;
      w[i] -= lr * (mHat / (std::sqrt(vHat) + config_.eps) + decay * w[i]);
    }
  }
}

}  // namespace loom::train
