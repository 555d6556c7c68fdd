// AdamW (decoupled weight decay) over the slices of the flat buffer this rank
// owns. Under ZeRO-1 those are its DP shards, so the moments (2/3 of the
// optimizer-plus-weights memory) are split across the DP group.
#pragma once

#include <vector>

#include "model/param_store.h"

namespace loom::train {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weightDecay = 0.1f;
};

class AdamW {
 public:
  AdamW(const ParamStore& store, const std::vector<Range>& owned, const AdamWConfig& config);

  /// One update with learning rate `lr`, using gradients multiplied by
  /// `gradScale` (the clipping factor).
  void step(ParamStore& store, float lr, float gradScale);
  /// Elements of state this rank holds (m and v each).
  size_t stateElements() const { return m_.size(); }

 private:
  /// A run of elements with one weight-decay setting (padding excluded).
  struct Slice {
    size_t begin, end;
    bool decay;
  };
  AdamWConfig config_;
  std::vector<Slice> slices_;
  std::vector<float> m_, v_;
  int steps_ = 0;
};

}  // namespace loom::train
