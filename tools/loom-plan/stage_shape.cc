#include "stage_shape.h"

#include <algorithm>

namespace loom::plan {

int layersOnStage(int layers, int stage, int stages) {
  return layers / stages + (stage < layers % stages ? 1 : 0);
}

int inFlightMicroBatches(int microBatches, int stage, int stages) {
  return std::min(microBatches, stages - stage);
}

}  // namespace loom::plan
