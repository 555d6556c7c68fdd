#include "model/transformer_block.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "math/kernels.h"
#include "model/linear.h"

namespace loom::train {
namespace {

constexpr float kInitStd = 0.02f;

std::string qualified(int layer, const char* name) {
  std::string s = "h";
  s += std::to_string(layer);
  s += '.';
  s += name;
  return s;
}

}  // namespace

std::vector<ParamSpec> blockParamSpecs(const ModelConfig& c, int layer) {
  // Ids: 16 per layer above the embedding/head ids, fixed so every rank and
  // stage keys the same random stream for the same tensor.
  const uint64_t base = 16 + 16 * static_cast<uint64_t>(layer);
  // Residual projections start smaller so the residual stream's variance does
  // not grow with depth (one factor per residual add: two per block).
  const float residStd = kInitStd / std::sqrt(2.0f * c.layers);
  const int C = c.dModel;
  const int F = c.hidden();
  auto spec = [&](const char* name, uint64_t id, int rows, int cols, Sharding sharding, int parts,
                  Init init, float stddev, bool decay) {
    return ParamSpec{
        qualified(layer, name), base + id, rows, cols, sharding, parts, init, stddev, decay};
  };
  return {
      spec("ln1.w", 0, 1, C, Sharding::kReplicated, 1, Init::kOnes, 0, false),
      spec("ln1.b", 1, 1, C, Sharding::kReplicated, 1, Init::kZeros, 0, false),
      spec("qkv.w", 2, C, 3 * C, Sharding::kColumns, 3, Init::kNormal, kInitStd, true),
      spec("qkv.b", 3, 1, 3 * C, Sharding::kColumns, 3, Init::kZeros, 0, false),
      spec("proj.w", 4, C, C, Sharding::kRows, 1, Init::kNormal, residStd, true),
      spec("proj.b", 5, 1, C, Sharding::kReplicated, 1, Init::kZeros, 0, false),
      spec("ln2.w", 6, 1, C, Sharding::kReplicated, 1, Init::kOnes, 0, false),
      spec("ln2.b", 7, 1, C, Sharding::kReplicated, 1, Init::kZeros, 0, false),
      spec("fc1.w", 8, C, F, Sharding::kColumns, 1, Init::kNormal, kInitStd, true),
      spec("fc1.b", 9, 1, F, Sharding::kColumns, 1, Init::kZeros, 0, false),
      spec("fc2.w", 10, F, C, Sharding::kRows, 1, Init::kNormal, residStd, true),
      spec("fc2.b", 11, 1, C, Sharding::kReplicated, 1, Init::kZeros, 0, false),
  };
}

TransformerBlock::TransformerBlock(const ModelConfig& config, int layer, ParamStore& store,
                                   GroupComm& tp)
    : config_(config), store_(store), tp_(tp) {
  auto id = [&](const char* name) { return store.index(qualified(layer, name)); };
  ids_ = {id("ln1.w"), id("ln1.b"), id("qkv.w"), id("qkv.b"), id("proj.w"), id("proj.b"),
          id("ln2.w"), id("ln2.b"), id("fc1.w"), id("fc1.b"), id("fc2.w"),  id("fc2.b")};
  localHeads_ = config.heads / tp.size();
  localWidth_ = localHeads_ * config.headDim();
  localHidden_ = config.hidden() / tp.size();
}

void TransformerBlock::forward(const float* x, int batch, float* out, BlockActivations& a,
                               ActivationMeter* meter) {
  const int N = batch * config_.seq;
  const int C = config_.dModel;
  const size_t NC = static_cast<size_t>(N) * C;
  ParamStore& p = store_;

  a.ln1 = ActivationBuffer(NC, meter);
  a.ln1Mean = ActivationBuffer(N, meter);
  a.ln1Rstd = ActivationBuffer(N, meter);
  math::layerNormForward(x, p.value(ids_.ln1w), p.value(ids_.ln1b), N, C, a.ln1.data(),
                         a.ln1Mean.data(), a.ln1Rstd.data());

  a.qkv = ActivationBuffer(static_cast<size_t>(N) * 3 * localWidth_, meter);
  linearForward({N, C, 3 * localWidth_}, a.ln1.data(), p.value(ids_.qkvw), p.value(ids_.qkvb),
                a.qkv.data());
  const math::AttentionShape shape{batch, config_.seq, localHeads_, config_.headDim()};
  a.probs =
      ActivationBuffer(static_cast<size_t>(batch) * localHeads_ * config_.seq * config_.seq, meter);
  a.attn = ActivationBuffer(static_cast<size_t>(N) * localWidth_, meter);
  math::attentionForward(shape, a.qkv.data(), a.probs.data(), a.attn.data());

  // Row-parallel projection: partial sums, one all-reduce, then the bias.
  a.resid = ActivationBuffer(NC, meter);
  linearForward({N, localWidth_, C}, a.attn.data(), p.value(ids_.projw), nullptr, a.resid.data());
  tp_.allReduceSum(a.resid.data(), NC);
  math::addRowVector(a.resid.data(), p.value(ids_.projb), N, C);
  math::add(a.resid.data(), x, a.resid.data(), NC);

  a.ln2 = ActivationBuffer(NC, meter);
  a.ln2Mean = ActivationBuffer(N, meter);
  a.ln2Rstd = ActivationBuffer(N, meter);
  math::layerNormForward(a.resid.data(), p.value(ids_.ln2w), p.value(ids_.ln2b), N, C, a.ln2.data(),
                         a.ln2Mean.data(), a.ln2Rstd.data());
  const size_t NF = static_cast<size_t>(N) * localHidden_;
  a.fc1 = ActivationBuffer(NF, meter);
  linearForward({N, C, localHidden_}, a.ln2.data(), p.value(ids_.fc1w), p.value(ids_.fc1b),
                a.fc1.data());
  a.gelu = ActivationBuffer(NF, meter);
  math::geluForward(a.fc1.data(), a.gelu.data(), NF);

  linearForward({N, localHidden_, C}, a.gelu.data(), p.value(ids_.fc2w), nullptr, out);
  tp_.allReduceSum(out, NC);
  math::addRowVector(out, p.value(ids_.fc2b), N, C);
  math::add(out, a.resid.data(), out, NC);
}

void TransformerBlock::backward(const float* x, int batch, const BlockActivations& a,
                                const float* dout, float* dx) {
  const int N = batch * config_.seq;
  const int C = config_.dModel;
  const size_t NC = static_cast<size_t>(N) * C;
  ParamStore& p = store_;

  // MLP: out = resid + FC2(GELU(FC1(LN2(resid)))).
  std::vector<float> dHidden(static_cast<size_t>(N) * localHidden_);
  linearBackward({N, localHidden_, C}, a.gelu.data(), p.value(ids_.fc2w), dout, p.grad(ids_.fc2w),
                 p.grad(ids_.fc2b), dHidden.data());
  math::geluBackward(a.fc1.data(), dHidden.data(), dHidden.data(), dHidden.size());
  std::vector<float> dLn(NC);
  linearBackward({N, C, localHidden_}, a.ln2.data(), p.value(ids_.fc1w), dHidden.data(),
                 p.grad(ids_.fc1w), p.grad(ids_.fc1b), dLn.data());
  tp_.allReduceSum(dLn.data(), NC);  // each rank saw only its hidden columns
  std::vector<float> dResid(dout, dout + NC);
  math::layerNormBackward(dLn.data(), a.resid.data(), p.value(ids_.ln2w), a.ln2Mean.data(),
                          a.ln2Rstd.data(), N, C, dResid.data(), p.grad(ids_.ln2w),
                          p.grad(ids_.ln2b));

  // Attention: resid = x + Proj(Attention(QKV(LN1(x)))).
  std::vector<float> dAttn(static_cast<size_t>(N) * localWidth_);
  linearBackward({N, localWidth_, C}, a.attn.data(), p.value(ids_.projw), dResid.data(),
                 p.grad(ids_.projw), p.grad(ids_.projb), dAttn.data());
  std::vector<float> dQkv(static_cast<size_t>(N) * 3 * localWidth_);
  const math::AttentionShape shape{batch, config_.seq, localHeads_, config_.headDim()};
  math::attentionBackward(shape, a.qkv.data(), a.probs.data(), dAttn.data(), dQkv.data());
  linearBackward({N, C, 3 * localWidth_}, a.ln1.data(), p.value(ids_.qkvw), dQkv.data(),
                 p.grad(ids_.qkvw), p.grad(ids_.qkvb), dLn.data());
  tp_.allReduceSum(dLn.data(), NC);  // each rank saw only its heads
  std::copy(dResid.begin(), dResid.end(), dx);
  math::layerNormBackward(dLn.data(), x, p.value(ids_.ln1w), a.ln1Mean.data(), a.ln1Rstd.data(), N,
                          C, dx, p.grad(ids_.ln1w), p.grad(ids_.ln1b));
}

}  // namespace loom::train
