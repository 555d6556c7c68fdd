// How a layout cuts the model into pipeline stages: layers per stage (the
// first stages take the remainder, as loom-train does) and how many
// micro-batches a stage holds at once under 1F1B.
#pragma once

#include "layout.h"
#include "model_shape.h"

namespace loom::plan {

/// Layers of pipeline stage `stage` of `stages`.
int layersOnStage(int layers, int stage, int stages);

/// Micro-batches whose activations stage `stage` holds at its peak under the
/// 1F1B schedule: min(m, p - stage) (the first stage warms up with p).
int inFlightMicroBatches(int microBatches, int stage, int stages);

}  // namespace loom::plan
