// The part of the GPT one rank runs: its pipeline stage's blocks, the embedding
// if it is the first stage, the final norm + tied LM head + loss if it is the
// last, each block holding this rank's tensor-parallel shard.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/activation_buffer.h"
#include "model/embedding.h"
#include "model/model_config.h"
#include "model/param_store.h"
#include "model/transformer_block.h"
#include "parallel/group_comm.h"

namespace loom::train {

/// `batch` sequences of `seq` tokens and their next-token targets.
struct MicroBatch {
  int batch = 0;
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;
};

/// Everything one micro-batch keeps between its forward and backward pass.
struct StageActivations {
  std::vector<ActivationBuffer> inputs;  ///< input of each local block
  std::vector<BlockActivations> blocks;  ///< per block; empty with activation checkpointing
  ActivationBuffer output;               ///< last block's output, on the last stage only
  HeadActivations head;
};

class GptStage {
 public:
  /// The stage's parameters in buffer order. The tied token embedding comes
  /// first, alone in its segment, on both the first and the last stage: the two
  /// copies then fall into identical gradient buckets and DP shards, and stay
  /// bit-identical through compression and ZeRO.
  static std::vector<std::vector<ParamSpec>> paramSegments(const ModelConfig& config,
                                                           const StageLayout& layout);

  GptStage(const ModelConfig& config, const StageLayout& layout, GroupComm& tp, size_t padMultiple,
           bool checkpointActivations);
  // Blocks point into store_: a stage never moves.
  GptStage(const GptStage&) = delete;
  GptStage& operator=(const GptStage&) = delete;

  /// Runs one micro-batch forward. The first stage reads mb.tokens, the others
  /// `input` ([batch * seq, dModel]). The last stage returns the summed loss;
  /// the others write `output` and return 0.
  double forward(const MicroBatch& mb, const float* input, float* output, float gradScale,
                 StageActivations& acts);
  /// Called during backward with an offset from which every gradient of the
  /// stage's last segment has received this micro-batch's contribution.
  using GradientsDone = std::function<void(size_t offset)>;

  /// Backward for the micro-batch `acts` belongs to; frees its activations as it goes.
  /// The last stage ignores dOutput; the first stage writes no dInput. `done`
  /// (may be empty) hears after the head, after each block and after the embedding.
  void backward(const MicroBatch& mb, StageActivations& acts, const float* dOutput, float* dInput,
                const GradientsDone& done = {});

  /// Elements of the activation passed between stages for `batch` sequences.
  size_t boundaryCount(int batch) const;
  ParamStore& params() { return store_; }
  const StageLayout& layout() const { return layout_; }
  ActivationMeter& meter() { return meter_; }

 private:
  ModelConfig config_;
  StageLayout layout_;
  bool checkpoint_;
  ParamStore store_;
  ActivationMeter meter_;
  std::vector<TransformerBlock> blocks_;
  std::unique_ptr<Embedding> embedding_;
  std::unique_ptr<LmHead> head_;
  // Where the last segment's gradients are complete after each part of backward.
  std::vector<size_t> blockStarts_;  ///< per local block: its first element
  size_t headStart_ = 0;             ///< the final norm's first element (last stage)
};

}  // namespace loom::train
