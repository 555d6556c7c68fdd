// The model's ends: token + position embedding on the first pipeline stage,
// final LayerNorm + LM head + cross-entropy on the last. The LM head reuses the
// token embedding (tied weights). Both are replicated across tensor-parallel
// ranks: with a byte vocabulary (256) the head is small, and replication keeps
// the loss and its gradient local instead of needing a vocab-parallel softmax.
#pragma once

#include <cstdint>
#include <vector>

#include "core/activation_buffer.h"
#include "model/model_config.h"
#include "model/param_store.h"

namespace loom::train {

std::vector<ParamSpec> tokenEmbeddingSpecs(const ModelConfig& config, bool normOwner);
std::vector<ParamSpec> positionEmbeddingSpecs(const ModelConfig& config);
std::vector<ParamSpec> finalNormSpecs(const ModelConfig& config);

class Embedding {
 public:
  Embedding(const ModelConfig& config, ParamStore& store);
  /// out [batch * seq, dModel] = wte[token] + wpe[position].
  void forward(const int32_t* tokens, int batch, float* out);
  void backward(const int32_t* tokens, int batch, const float* dout);

 private:
  ModelConfig config_;
  ParamStore& store_;
  int wte_, wpe_;
};

struct HeadActivations {
  ActivationBuffer normed, mean, rstd;
  ActivationBuffer dlogits;  ///< computed with the loss in forward; backward needs only this
};

class LmHead {
 public:
  LmHead(const ModelConfig& config, ParamStore& store);
  /// Returns the summed cross-entropy of `batch * seq` tokens; keeps the logits'
  /// gradient scaled by `gradScale` (1 / tokens in the global batch).
  double forward(const float* x, const int32_t* targets, int batch, float gradScale,
                 HeadActivations& acts, ActivationMeter* meter);
  void backward(const float* x, int batch, const HeadActivations& acts, float* dx);

 private:
  ModelConfig config_;
  ParamStore& store_;
  int wte_, lnw_, lnb_;
};

}  // namespace loom::train
