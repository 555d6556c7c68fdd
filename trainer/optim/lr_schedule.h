// Learning rate: linear warm-up to the peak, then cosine decay to minLr at the last step.
#pragma once

namespace loom::train {

struct LrSchedule {
  float peak = 3e-3f;
  float minLr = 3e-4f;
  int warmupSteps = 10;
  int totalSteps = 100;

  /// Learning rate for 0-based `step`.
  float at(int step) const;
};

}  // namespace loom::train
