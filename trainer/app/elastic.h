// loom-train --elastic: training that survives the loss of ranks. When a step
// fails because a peer died (or stalled past LOOM_TIMEOUT), every survivor
// revokes its communicators, the survivors shrink the world, every
// data-parallel replica that lost a rank leaves (its other ranks exit), and the
// rest rebuild their groups with fewer replicas, restore the state the failed
// step started from, and redo it. Each replica keeps its share of the batch,
// so the global batch shrinks with the replicas.
#pragma once

#include <functional>
#include <loom/loom.hpp>
#include <string>

#include "app/train_options.h"
#include "data/corpus.h"

namespace loom::train {

struct StepStats;
class Trainer;

struct ElasticCallbacks {
  /// Once the first trainer is built (for the run's banner).
  std::function<void(Trainer&, bool leader)> onStart;
  /// After each step; `leader` is rank 0 of the current world.
  std::function<void(const StepStats&, bool leader)> onStep;
  /// After a recovery: the step to redo, the world it now runs on, and the
  /// seconds from the failed call's return to the rebuilt trainer.
  std::function<void(int step, int ranks, int dp, double seconds, bool leader)> onRecovered;
  /// After the world grew back (app/grow_back.h): the step it goes on with,
  /// its size, and the seconds the growing took (on a new rank: from the
  /// start of its wait).
  std::function<void(int step, int ranks, int dp, double seconds, bool leader)> onGrown;
  /// A grow failed (a rank was lost on the way): the world goes on at its
  /// size with the step it was at; a later step tries again.
  std::function<void(int step, int ranks, int dp, bool leader)> onGrowFailed;
};

/// Trains options.steps steps on `world`, which it replaces by the survivors'
/// communicator after a failure. Under `loomrun --respawn` (LOOM_GROW_DIR) the
/// world grows back to its starting size when a whole replica's worth of
/// ranks waits to join (app/grow_back.h), and a rank whose replica broke waits
/// to rejoin instead of leaving. `joining`: this rank starts by waiting to be
/// taken in (a replacement; `world` is replaced). Returns false when this
/// rank left without finishing. Rethrows errors that are not a peer's
/// failure, and any failure once no complete replica is left.
bool runElasticTraining(loom::Comm& world, TrainOptions options, const Corpus& corpus,
                        const ElasticCallbacks& callbacks, bool joining = false);

/// The fault injection of the elastic tests: LOOM_TRAIN_KILL="R:S" makes world
/// rank R (of the world the run started with) SIGKILL itself at the start of
/// step S; "joiner" makes the first rank taken in by a grow SIGKILL itself
/// once the grown communicator exists (once per job). Both may be given,
/// separated by a comma ("2:10,joiner"). Empty or unset: nothing.
struct InjectedFault {
  int rank = -1;
  int step = -1;
  bool joiner = false;
};
InjectedFault injectedFault();

}  // namespace loom::train
