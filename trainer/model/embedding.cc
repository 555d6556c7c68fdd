#include "model/embedding.h"

#include <algorithm>

#include "math/kernels.h"

namespace loom::train {
namespace {

// Parameter ids below 16 belong to the model's ends; blocks start at 16.
constexpr uint64_t kTokenEmbeddingId = 0;
constexpr uint64_t kPositionEmbeddingId = 1;
constexpr uint64_t kFinalNormWeightId = 2;
constexpr uint64_t kFinalNormBiasId = 3;
constexpr float kInitStd = 0.02f;

}  // namespace

std::vector<ParamSpec> tokenEmbeddingSpecs(const ModelConfig& c, bool normOwner) {
  ParamSpec wte{"wte", kTokenEmbeddingId, c.vocab,  c.dModel, Sharding::kReplicated,
                1,     Init::kNormal,     kInitStd, true};
  wte.normOwner = normOwner;
  return {wte};
}

std::vector<ParamSpec> positionEmbeddingSpecs(const ModelConfig& c) {
  return {{"wpe", kPositionEmbeddingId, c.seq, c.dModel, Sharding::kReplicated, 1, Init::kNormal,
           kInitStd, true}};
}

std::vector<ParamSpec> finalNormSpecs(const ModelConfig& c) {
  return {
      {"lnf.w", kFinalNormWeightId, 1, c.dModel, Sharding::kReplicated, 1, Init::kOnes, 0, false},
      {"lnf.b", kFinalNormBiasId, 1, c.dModel, Sharding::kReplicated, 1, Init::kZeros, 0, false},
  };
}

Embedding::Embedding(const ModelConfig& config, ParamStore& store)
    : config_(config), store_(store), wte_(store.index("wte")), wpe_(store.index("wpe")) {}

void Embedding::forward(const int32_t* tokens, int batch, float* out) {
  math::embeddingForward(tokens, store_.value(wte_), store_.value(wpe_), batch, config_.seq,
                         config_.dModel, out);
}

void Embedding::backward(const int32_t* tokens, int batch, const float* dout) {
  math::embeddingBackward(dout, tokens, batch, config_.seq, config_.dModel, store_.grad(wte_),
                          store_.grad(wpe_));
}

LmHead::LmHead(const ModelConfig& config, ParamStore& store)
    : config_(config),
      store_(store),
      wte_(store.index("wte")),
      lnw_(store.index("lnf.w")),
      lnb_(store.index("lnf.b")) {}

double LmHead::forward(const float* x, const int32_t* targets, int batch, float gradScale,
                       HeadActivations& a, ActivationMeter* meter) {
  const int N = batch * config_.seq;
  const int C = config_.dModel;
  const int V = config_.vocab;
  a.normed = ActivationBuffer(static_cast<size_t>(N) * C, meter);
  a.mean = ActivationBuffer(N, meter);
  a.rstd = ActivationBuffer(N, meter);
  math::layerNormForward(x, store_.value(lnw_), store_.value(lnb_), N, C, a.normed.data(),
                         a.mean.data(), a.rstd.data());
  // logits = normed wte^T; the softmax gradient overwrites them in place.
  a.dlogits = ActivationBuffer(static_cast<size_t>(N) * V, meter);
  math::gemm(false, true, N, V, C, 1.0f, a.normed.data(), C, store_.value(wte_), C, 0.0f,
             a.dlogits.data(), V);
  return math::crossEntropy(a.dlogits.data(), targets, N, V, gradScale, a.dlogits.data());
}

void LmHead::backward(const float* x, int batch, const HeadActivations& a, float* dx) {
  const int N = batch * config_.seq;
  const int C = config_.dModel;
  const int V = config_.vocab;
  std::vector<float> dNormed(static_cast<size_t>(N) * C);
  math::gemm(false, false, N, C, V, 1.0f, a.dlogits.data(), V, store_.value(wte_), C, 0.0f,
             dNormed.data(), C);
  math::gemm(true, false, V, C, N, 1.0f, a.dlogits.data(), V, a.normed.data(), C, 1.0f,
             store_.grad(wte_), C);
  std::fill(dx, dx + static_cast<size_t>(N) * C, 0.0f);
  math::layerNormBackward(dNormed.data(), x, store_.value(lnw_), a.mean.data(), a.rstd.data(), N, C,
                          dx, store_.grad(lnw_), store_.grad(lnb_));
}

}  // namespace loom::train
