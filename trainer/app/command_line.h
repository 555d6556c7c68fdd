// loom-train's flags (CLI11).
#pragma once

#include <string>

#include "app/train_options.h"

namespace loom::train {

enum class ParseOutcome { kRun, kExitSuccess, kError };

/// Fills *options from argv. kExitSuccess after --help (printed to stdout);
/// kError with a one-line *error for unknown flags or unparsable values.
ParseOutcome parseCommandLine(int argc, const char* const* argv, TrainOptions* options,
                              std::string* error);

}  // namespace loom::train
