// One pre-LayerNorm transformer block, Megatron tensor-parallel:
//   h = x + Proj(Attention(QKV(LN1(x))))      QKV column-parallel (whole heads),
//   y = h + FC2(GELU(FC1(LN2(h))))            Proj row-parallel; FC1 column-, FC2 row-parallel.
// Each rank holds heads/tp heads and hidden/tp MLP columns. The forward pass
// all-reduces once after Proj and once after FC2; the backward pass once into
// LN1's and once into LN2's input gradient. Row-parallel biases are added after
// the all-reduce (otherwise they would be counted tp times).
#pragma once

#include <vector>

#include "core/activation_buffer.h"
#include "model/model_config.h"
#include "model/param_store.h"
#include "parallel/group_comm.h"

namespace loom::train {

/// What backward needs from one forward pass of one block.
struct BlockActivations {
  ActivationBuffer ln1, ln1Mean, ln1Rstd;
  ActivationBuffer qkv, probs, attn;
  ActivationBuffer resid, ln2, ln2Mean, ln2Rstd;
  ActivationBuffer fc1, gelu;
};

/// The block's parameters as the single-rank model names them (layer-qualified).
std::vector<ParamSpec> blockParamSpecs(const ModelConfig& config, int layer);

class TransformerBlock {
 public:
  TransformerBlock(const ModelConfig& config, int layer, ParamStore& store, GroupComm& tp);

  /// out = block(x) for `batch` sequences; fills `acts` (counted against `meter`).
  void forward(const float* x, int batch, float* out, BlockActivations& acts,
               ActivationMeter* meter);
  /// dx = d loss / d x given dout; accumulates this block's parameter gradients.
  void backward(const float* x, int batch, const BlockActivations& acts, const float* dout,
                float* dx);

 private:
  struct Ids {
    int ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fc1w, fc1b, fc2w, fc2b;
  };
  ModelConfig config_;
  ParamStore& store_;
  GroupComm& tp_;
  Ids ids_;
  int localHeads_;
  int localWidth_;   ///< attention channels on this rank: localHeads * headDim
  int localHidden_;  ///< MLP hidden units on this rank
};

}  // namespace loom::train
