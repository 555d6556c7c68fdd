// One rank's training loop: builds the grid, its model stage, the gradient
// sync and the optimizer, and runs steps. Used by loom-train and by the tests
// (which run many ranks as threads).
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <memory>
#include <string>

#include "app/train_options.h"
#include "data/corpus.h"
#include "model/gpt_stage.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "parallel/gradient_sync.h"
#include "parallel/grid.h"
#include "parallel/pipeline_runner.h"

namespace loom::train {

/// What one step did, the same on every rank (reduced over the world).
struct StepStats {
  int step = 0;
  double loss = 0;  ///< mean over the global batch, before this step's update
  double lr = 0;
  double gradNorm = 0;  ///< before clipping
  double seconds = 0;   ///< mean over ranks
  double tokensPerSecond = 0;
  double commFraction = 0;         ///< share of the step spent in collectives, mean over ranks
  double wireBytes = 0;            ///< bytes sent on all groups, summed over ranks
  double dpPayloadBytes = 0;       ///< gradient bytes the DP reductions covered, summed over ranks
  double dpWireBytes = 0;          ///< bytes sent on the DP groups, summed over ranks
  double bubble = 0;               ///< measured pipeline idle share, mean over ranks
  double peakActivationBytes = 0;  ///< max over ranks
  double dpBucketsOverlapped = 0;  ///< DP buckets reduced while backward ran, summed over ranks
};

class Trainer {
 public:
  /// Collective over `world` (the communicator is borrowed, not owned).
  Trainer(loomComm_t world, const TrainOptions& options, const Corpus& corpus);

  StepStats step(int step);

  /// Writes a checkpoint of the state after `nextStep - 1` (collective over
  /// the world: every rank writes its file, then rank 0 the manifest).
  void save(const std::string& dir, int nextStep);
  /// The state a step starts from: every parameter (padding left out, so it
  /// fits a trainer with another DP size) and the optimizer state.
  struct Snapshot {
    std::vector<float> params;
    AdamW::State optimizer;
  };
  Snapshot snapshot() const;
  /// Takes over a snapshot of a trainer of the same model, TP and PP sizes
  /// without ZeRO-1 (the DP size may differ). Throws std::invalid_argument if
  /// it does not fit.
  void restore(const Snapshot& snapshot);
  /// Revokes every communicator of the grid, so that ranks waiting in any of
  /// its calls return (after a failure, --elastic).
  void revokeAll() { grid_.revokeAll(); }

  /// Loads a checkpoint saved by the same configuration (collective); returns
  /// the step to train next. Throws std::runtime_error on every rank if any
  /// rank cannot load its file.
  int resume(const std::string& dir);

  ParallelGrid& grid() { return grid_; }
  GptStage& stage() { return *stage_; }
  const GradientSync& gradientSync() const { return sync_; }

 private:
  std::vector<MicroBatch> sampleMicroBatches(int step) const;
  void sumTiedEmbeddingGrads();

  TrainOptions options_;
  const Corpus& corpus_;
  CommClock clock_;
  ParallelGrid grid_;
  std::unique_ptr<GptStage> stage_;
  GradientSync sync_;
  AdamW optimizer_;
  LrSchedule schedule_;
  PipelineRunner runner_;
};

}  // namespace loom::train
