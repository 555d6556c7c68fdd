// Runs a training configuration on dp*tp*pp ranks as threads of this process
// (loomCommInitAll), which keeps 8-rank tests cheap on a 2-core machine.
#pragma once

#include <vector>

#include "app/train_options.h"
#include "app/trainer.h"

namespace loom::train::testing {

/// A tiny model that still has every part: 2 blocks, 4 heads, several buckets,
/// clipping that binds (so a wrong global norm would change the loss).
TrainOptions tinyOptions(int dp, int tp, int pp);

/// Trains on threads as loom-train does (resuming and saving as `o` says);
/// returns rank 0's stats per step trained.
std::vector<StepStats> trainOnThreads(const TrainOptions& o);

}  // namespace loom::train::testing
