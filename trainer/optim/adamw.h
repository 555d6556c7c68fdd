// AdamW (decoupled weight decay) over the slices of the flat buffer this rank
// owns. Under ZeRO-1 those are its DP shards, so the moments (2/3 of the
// optimizer-plus-weights memory) are split across the DP group.
//
// Sparse gradients (top-k with error feedback): an element whose reduced
// gradient is exactly zero was not sent this step; its gradient waits in the
// senders' residuals and arrives later as one sum. Fed to plain Adam, that sum
// is one ordinary-sized step (Adam divides by the element's own RMS) after
// several steps without motion, so rarely sent weights barely move. With
// `holdZeroGradients`, such an element is held (no moment decay, no update,
// no weight decay) and, when a sum G arrives after k held steps, Adam runs the
// k steps it missed with G/k each: the update dense Adam makes for gradients
// averaged over those steps.
#pragma once

#include <cstdint>
#include <vector>

#include "model/param_store.h"

namespace loom::train {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weightDecay = 0.1f;
  bool holdZeroGradients = false;  ///< see above; for sparse (top-k) gradients
};

class AdamW {
 public:
  AdamW(const ParamStore& store, const std::vector<Range>& owned, const AdamWConfig& config);

  /// One update with learning rate `lr`, using gradients multiplied by
  /// `gradScale` (the clipping factor).
  void step(ParamStore& store, float lr, float gradScale);
  /// Elements of state this rank holds (m and v each).
  size_t stateElements() const { return m_.size(); }

  /// What a checkpoint carries: the moments, the held counts and Adam's step.
  struct State {
    std::vector<float> m, v;
    std::vector<uint32_t> held;  ///< empty unless holdZeroGradients
    int steps = 0;
  };
  State state() const { return {m_, v_, held_, steps_}; }
  /// Takes `s` over; throws std::invalid_argument when its sizes are not this
  /// optimizer's (a checkpoint of another model, grid or compression).
  void restore(State s);

 private:
  /// A run of elements with one weight-decay setting (padding excluded).
  struct Slice {
    size_t begin, end;
    bool decay;
  };
  /// Adam's step number t (1-based) as its two bias corrections.
  struct Corrections {
    float first, second;
  };
  Corrections corrections(int t);
  /// One Adam update of element `state` (weight w) with gradient `grad` at step t.
  void update(size_t state, float& w, float grad, float lr, float decay, int t);

  AdamWConfig config_;
  std::vector<Slice> slices_;
  std::vector<float> m_, v_;
  std::vector<uint32_t> held_;            ///< per element: steps held (holdZeroGradients)
  std::vector<Corrections> corrections_;  ///< index t - 1; grows with the run
  int steps_ = 0;
};

}  // namespace loom::train
