// Checkpoints of a training run (--save DIR / --resume DIR): every rank writes
// its own file (its parameters and the optimizer state it owns), and rank 0
// then writes a manifest naming the step, the grid, the model and every file.
// A directory is a complete checkpoint once its manifest exists: files are
// written under a temporary name and renamed into place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/train_options.h"
#include "optim/adamw.h"

namespace loom::train {

/// What one rank's file holds.
struct RankState {
  int nextStep = 0;           ///< the first step a resumed run trains
  std::vector<float> values;  ///< the rank's whole parameter buffer
  AdamW::State optimizer;
};

/// "rank-00003.ckpt".
std::string rankFileName(int rank);
/// Where --save puts the checkpoint taken before `nextStep`: root/step-000120.
std::string checkpointDirectory(const std::string& root, int nextStep);
/// `path` itself when it holds a complete checkpoint, else the complete
/// checkpoint of the latest step under it (a --save root). Throws
/// std::runtime_error when there is none.
std::string latestCheckpoint(const std::string& path);

/// Writes `dir`/rank-R.ckpt for `rank` of a run configured by `o`. Throws
/// std::runtime_error naming the file on any I/O error.
void writeRankState(const std::string& dir, int rank, int worldSize, const TrainOptions& o,
                    const RankState& state);
/// Writes `dir`/manifest.json once every rank's file is in place (rank 0).
void writeManifest(const std::string& dir, int worldSize, const TrainOptions& o, int nextStep);

/// Reads `rank`'s state from a checkpoint of a run with the same grid, world
/// size, model and seed. Throws std::runtime_error saying what does not match
/// or which file is missing, short or corrupt.
RankState readRankState(const std::string& dir, int rank, int worldSize, const TrainOptions& o);

}  // namespace loom::train
