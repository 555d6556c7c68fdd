// The transformer a plan is made for: its shape, how its numbers are stored,
// and how many parameters each part holds. Presets name the published models
// and the trainer's own.
#pragma once

#include <string>
#include <vector>

namespace loom::plan {

/// How weights, gradients, optimizer state and activations are stored. Two
/// regimes matter: mixed precision as Megatron-LM and the ZeRO paper count it,
/// and the all-fp32 arithmetic of loom-train.
struct Numerics {
  std::string name;                ///< "mixed" or "fp32"
  double weightBytes = 2;          ///< per parameter
  double gradBytes = 2;            ///< per parameter, also what DP reduces per element
  double optimizerBytes = 12;      ///< per parameter: the ZeRO paper's K
  double activationBytes = 2;      ///< per activation element
  double replicatedPerToken = 10;  ///< activation bytes per token and unit of hidden, unsplit by TP
  double replicatedFixedPerToken = 0;  ///< bytes per token independent of hidden (norm statistics)
  double scoreBytes = 5;               ///< bytes per attention score (b * heads * s * s of them)
  double logitBytes = 4;               ///< bytes per logit kept for the loss's backward
  bool vocabParallel = true;           ///< embedding and logits split over TP
};

/// Megatron-LM's mixed precision (fp16/bf16 weights and gradients, fp32 Adam
/// master weights and moments; dropout masks kept).
Numerics mixedPrecision();
/// loom-train: every buffer fp32, AdamW's two moments, no dropout.
Numerics trainerFp32();

struct ModelShape {
  std::string name = "custom";
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kvHeads = 0;  ///< 0: as many as heads (no grouped-query attention)
  int ffn = 0;      ///< 0: 4 * hidden
  int seq = 0;
  int vocab = 0;
  int globalBatch = 0;           ///< sequences per optimizer step
  bool gatedMlp = false;         ///< SwiGLU: three MLP matrices instead of two
  bool biases = true;            ///< linear layers carry biases (GPT) or not (Llama)
  bool learnedPositions = true;  ///< a seq x hidden position table
  bool tiedEmbedding = true;     ///< the LM head reuses the token embedding
  Numerics numerics = mixedPrecision();

  int ffnSize() const { return ffn > 0 ? ffn : 4 * hidden; }
  int kvHeadCount() const { return kvHeads > 0 ? kvHeads : heads; }
  /// Width of the K and V projections together is 2 * kvWidth().
  double kvWidth() const;
};

/// Parameters of one transformer layer as one TP rank of `tp` stores them:
/// column- and row-parallel matrices and column biases split, norms and
/// row-parallel biases whole (Megatron's and loom-train's layout).
double layerParamsPerRank(const ModelShape& m, int tp);
/// Token (and position) embedding on one TP rank.
double embeddingParamsPerRank(const ModelShape& m, int tp);
/// The whole model, unsplit: what "N parameters" means.
double totalParams(const ModelShape& m);

/// The named presets ("gpt3-175b", "1t", ...), each with a one-line origin.
struct Preset {
  ModelShape shape;
  std::string origin;
};
const std::vector<Preset>& presets();
/// Throws Error(InvalidArgument) listing the known names.
ModelShape presetNamed(const std::string& name);

/// Throws Error(InvalidArgument) naming the first field that is out of range.
void validateShape(const ModelShape& m);

}  // namespace loom::plan
