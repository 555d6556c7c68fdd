// How a step is shown: the progress line on stdout and a CSV row per step.
#pragma once

#include <fstream>
#include <string>

#include "app/train_options.h"
#include "app/trainer.h"

namespace loom::train {

/// "step 12/300 | loss 2.3456 | 5400 tok/s | comm 23% | wire ... | bubble ..."
std::string progressLine(const StepStats& s, const TrainOptions& o);
/// One line describing the run (grid, model size, schedule, compression).
std::string runBanner(const TrainOptions& o, size_t stageParams, int worldSize);

class CsvLog {
 public:
  /// Opens `path` for writing and writes the header; throws if it cannot.
  explicit CsvLog(const std::string& path);
  void write(const StepStats& s);

 private:
  std::ofstream out_;
};

}  // namespace loom::train
