// Shape of the GPT and how it is cut into pipeline stages.
#pragma once

#include <string>

namespace loom::train {

struct ModelConfig {
  int vocab = 256;  // byte-level tokenizer
  int layers = 2;
  int dModel = 64;
  int heads = 4;
  int seq = 32;  // context length = number of learned positions
  int headDim() const { return dModel / heads; }
  int hidden() const { return 4 * dModel; }
};

/// The layers [firstLayer, endLayer) that pipeline stage `stage` of `stages` runs.
/// Layers are spread as evenly as possible; earlier stages take the remainder,
/// since the last stage also runs the LM head.
struct StageLayout {
  int stage = 0;
  int stages = 1;
  int firstLayer = 0;
  int endLayer = 0;
  bool isFirst() const { return stage == 0; }
  bool isLast() const { return stage == stages - 1; }
  int layerCount() const { return endLayer - firstLayer; }
};

StageLayout stageLayout(int layers, int stage, int stages);

}  // namespace loom::train
