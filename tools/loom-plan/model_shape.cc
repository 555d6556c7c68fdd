#include "model_shape.h"

#include <fmt/format.h>

#include "core/error.h"

namespace loom::plan {

Numerics mixedPrecision() {
  // Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  // Transformer Models", per layer without sequence parallelism:
  // s*b*h*(10 + 24/t) + 5*a*s^2*b/t bytes; the 24 is 2 bytes times the TP-split
  // elements per token (computeActivation derives them from the shape).
  return Numerics{"mixed", 2, 2, 12, 2, 10, 0, 5, 4, true};
}

Numerics trainerFp32() {
  // loom-train keeps per layer, in fp32: the input, both layer-norm outputs and
  // the residual (4h floats per token), four norm statistics per token, the
  // TP-split qkv/attention/fc1/gelu tensors and one probability per score.
  return Numerics{"fp32", 4, 4, 8, 4, 16, 16, 4, 4, false};
}

double ModelShape::kvWidth() const { return static_cast<double>(hidden) / heads * kvHeadCount(); }

double layerParamsPerRank(const ModelShape& m, int tp) {
  const double h = m.hidden;
  const double f = m.ffnSize();
  const double qkvOut = h + 2 * m.kvWidth();
  const double mlpMatrices = m.gatedMlp ? 3 : 2;
  double split = h * qkvOut + h * h + mlpMatrices * h * f;
  double whole = m.biases ? 4 * h : 2 * h;  // two norms: LayerNorm has weight and bias
  if (m.biases) {
    split += qkvOut + f;  // column-parallel biases
    whole += 2 * h;       // row-parallel biases are added after the all-reduce
  }
  return split / tp + whole;
}

double embeddingParamsPerRank(const ModelShape& m, int tp) {
  const double tokens = static_cast<double>(m.vocab) * m.hidden;
  const double positions = m.learnedPositions ? static_cast<double>(m.seq) * m.hidden : 0.0;
  return (m.numerics.vocabParallel ? tokens / tp : tokens) + positions;
}

double totalParams(const ModelShape& m) {
  const double head = m.tiedEmbedding ? 0.0 : static_cast<double>(m.vocab) * m.hidden;
  const double finalNorm = (m.biases ? 2.0 : 1.0) * m.hidden;
  return m.layers * layerParamsPerRank(m, 1) + embeddingParamsPerRank(m, 1) + head + finalNorm;
}

namespace {

// The fields every preset sets; the families differ in the rest.
ModelShape shape(const std::string& name, int layers, int hidden, int heads, int seq, int vocab,
                 int batch) {
  ModelShape m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.seq = seq;
  m.vocab = vocab;
  m.globalBatch = batch;
  return m;
}

ModelShape gpt(const std::string& name, int layers, int hidden, int heads, int batch) {
  return shape(name, layers, hidden, heads, 2048, 51200, batch);
}

ModelShape llama(const std::string& name, int layers, int hidden, int heads, int ffn) {
  ModelShape m = shape(name, layers, hidden, heads, 8192, 128256, 512);
  m.kvHeads = 8;
  m.ffn = ffn;
  m.gatedMlp = true;
  m.biases = false;
  m.learnedPositions = false;
  m.tiedEmbedding = false;
  m.numerics.scoreBytes = 2;          // no attention dropout
  m.numerics.replicatedPerToken = 8;  // no dropout masks
  return m;
}

ModelShape trainer(const std::string& name, int layers, int dModel, int heads, int seq, int batch) {
  ModelShape m = shape(name, layers, dModel, heads, seq, 256, batch);
  m.numerics = trainerFp32();
  return m;
}

std::vector<Preset> makePresets() {
  return {
      {gpt("gpt3-175b", 96, 12288, 96, 1536),
       "GPT-3 175B as trained in Narayanan et al. SC21 (seq 2048, vocab 51200, batch 1536)"},
      {gpt("1t", 128, 25600, 160, 3072),
       "Megatron-LM's 1T model, Narayanan et al. SC21 Table 1 (batch 3072)"},
      {gpt("gpt-39b", 48, 8192, 64, 1536), "Narayanan et al. SC21 Table 1, 39.1B row (batch 1536)"},
      {llama("llama-8b", 32, 4096, 32, 14336),
       "Llama-3 8B shape (GQA 8 KV heads, SwiGLU 14336, vocab 128256, seq 8192); batch 512"},
      {llama("llama-70b", 80, 8192, 64, 28672),
       "Llama-3 70B shape (GQA 8 KV heads, SwiGLU 28672, vocab 128256, seq 8192); batch 512"},
      {trainer("trainer-tiny", 2, 64, 4, 32, 16), "loom-train's defaults"},
      {trainer("trainer-small", 4, 128, 8, 64, 32),
       "loom-train --layers 4 --d-model 128 --heads 8 --seq 64 --batch 32"},
  };
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = makePresets();
  return all;
}

ModelShape presetNamed(const std::string& name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (p.shape.name == name) return p.shape;
    known += (known.empty() ? "" : ", ") + p.shape.name;
  }
  raise(ErrorCode::InvalidArgument, "--preset '{}' is not known; presets: {}", name, known);
}

void validateShape(const ModelShape& m) {
  const auto positive = [](int value, const char* flag) {
    if (value < 1) raise(ErrorCode::InvalidArgument, "{} must be >= 1 (got {})", flag, value);
  };
  positive(m.layers, "--layers");
  positive(m.hidden, "--hidden");
  positive(m.heads, "--heads");
  positive(m.seq, "--seq");
  positive(m.vocab, "--vocab");
  positive(m.globalBatch, "--batch");
  if (m.hidden % m.heads != 0) {
    raise(ErrorCode::InvalidArgument, "--hidden {} is not divisible by --heads {}", m.hidden,
          m.heads);
  }
  if (m.kvHeads < 0 || (m.kvHeads > 0 && m.heads % m.kvHeads != 0)) {
    raise(ErrorCode::InvalidArgument,
          "--kv-heads {} must divide --heads {} (grouped-query attention)", m.kvHeads, m.heads);
  }
  if (m.ffn < 0) raise(ErrorCode::InvalidArgument, "--ffn must be >= 0 (got {})", m.ffn);
}

}  // namespace loom::plan
