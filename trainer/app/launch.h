// What the trainer needs to know about how it was started, before Loom is up.
#pragma once

#include <loom/loom.hpp>

namespace loom::train {

/// False when a launcher's rank variable names a rank other than 0, so that a
/// flag error is printed once, not once per rank.
bool launcherRankIsZero();
/// Whether a launcher's rank variable is set (loomrun, mpirun, srun, torchrun).
bool startedByLauncher();
/// The world: from the launcher's environment, or a single rank when the
/// program was started by hand.
loom::Comm joinWorld();

}  // namespace loom::train
