// The step loop loom-train runs, shared with the tests: resume from a
// checkpoint if asked, train to the last step, save checkpoints if asked.
#pragma once

#include <functional>

#include "app/train_options.h"
#include "app/trainer.h"

namespace loom::train {

/// Runs steps [first, options.steps) where `first` is 0 or the resumed
/// checkpoint's step; calls `onStep` after each with the step's stats, and
/// `onResume` (may be empty) once with the checkpoint and step it resumed from.
void runTraining(Trainer& trainer, const TrainOptions& options,
                 const std::function<void(const StepStats&)>& onStep,
                 const std::function<void(const std::string& from, int step)>& onResume = {});

}  // namespace loom::train
