// Everything a training run is configured by, and the checks that reject a bad
// configuration with one line before any rank does work.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <string>

#include "model/model_config.h"
#include "parallel/compression_spec.h"
#include "parallel/grid.h"
#include "parallel/pipeline_schedule.h"

namespace loom::train {

struct TrainOptions {
  GridShape grid;
  ModelConfig model;
  int batch = 16;        ///< sequences in the global batch (all DP ranks together)
  int microBatches = 1;  ///< per DP rank and step
  int steps = 100;
  float lr = 3e-3f;
  float minLr = 3e-4f;
  int warmup = 10;
  float weightDecay = 0.1f;
  float gradClip = 1.0f;  ///< global-norm clipping threshold; <= 0 turns it off
  uint64_t seed = 1337;
  CompressionSpec compression;  ///< DP gradients; default: none
  int zero = 0;                 ///< ZeRO stage: 0 or 1
  ScheduleKind schedule = ScheduleKind::kOneForwardOneBackward;
  bool checkpointActivations = false;
  size_t bucketElements = 1 << 18;  ///< DP bucket size (1 MiB of fp32)
  bool overlapDp = true;            ///< reduce DP buckets while backward still runs
  std::string dataPath;             ///< empty: the synthetic corpus
  size_t syntheticBytes = 1 << 20;
  std::string logPath;     ///< CSV log; empty: none
  std::string savePath;    ///< --save: checkpoints go to savePath/step-NNNNNN; empty: none
  int saveEvery = 0;       ///< also every this many steps; 0: only after the last
  std::string resumePath;  ///< --resume: a checkpoint, or a --save directory (its latest)
  bool elastic = false;    ///< survive the loss of ranks (app/elastic.h)
  int blasThreads = 1;
  bool quiet = false;

  int samplesPerRank() const { return batch / grid.dp; }
  int microBatchSize() const { return samplesPerRank() / microBatches; }
};

/// Empty when `o` can run on `worldSize` ranks, else one line saying what is
/// wrong with the values involved. Checks that the data file can be read.
std::string validateOptions(const TrainOptions& o, int worldSize);

}  // namespace loom::train
