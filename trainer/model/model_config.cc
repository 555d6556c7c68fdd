#include "model/model_config.h"

namespace loom::train {

StageLayout stageLayout(int layers, int stage, int stages) {
  StageLayout layout;
  layout.stage = stage;
  layout.stages = stages;
  const int base = layers / stages;
  const int extra = layers % stages;
  layout.firstLayer = stage * base + (stage < extra ? stage : extra);
  layout.endLayer = layout.firstLayer + base + (stage < extra ? 1 : 0);
  return layout;
}

}  // namespace loom::train
