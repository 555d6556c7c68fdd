#include "app/training_loop.h"

#include "app/checkpoint.h"

namespace loom::train {

void runTraining(Trainer& trainer, const TrainOptions& options,
                 const std::function<void(const StepStats&)>& onStep,
                 const std::function<void(const std::string& from, int step)>& onResume) {
  int first = 0;
  if (!options.resumePath.empty()) {
    const std::string from = latestCheckpoint(options.resumePath);
    first = trainer.resume(from);
    if (onResume) onResume(from, first);
  }
  for (int step = first; step < options.steps; ++step) {
    onStep(trainer.step(step));
    const int done = step + 1;
    const bool periodic = options.saveEvery > 0 && done % options.saveEvery == 0;
    if (!options.savePath.empty() && (periodic || done == options.steps)) {
      trainer.save(checkpointDirectory(options.savePath, done), done);
    }
  }
}

}  // namespace loom::train
