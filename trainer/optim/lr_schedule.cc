#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace loom::train {

float LrSchedule::at(int step) const {
  if (step < warmupSteps) return peak * static_cast<float>(step + 1) / warmupSteps;
  const int decaySteps = std::max(1, totalSteps - warmupSteps);
  const float progress = std::min(1.0f, static_cast<float>(step - warmupSteps) / decaySteps);
  const float cosine = 0.5f * (1.0f + std::cos(3.14159265358979f * progress));
  return minLr + (peak - minLr) * cosine;
}

}  // namespace loom::train
