#include "memory_model.h"

#include <algorithm>

#include "stage_shape.h"

namespace loom::plan {

double splitActivationElements(const ModelShape& m) {
  const double h = m.hidden;
  const double qkv = h + 2 * m.kvWidth();
  const double mlpInner = (m.gatedMlp ? 3.0 : 2.0) * m.ffnSize();
  return qkv + h + mlpInner;
}

double layerActivationBytes(const ModelShape& m, const Layout& l) {
  const Numerics& n = m.numerics;
  const double tokens = static_cast<double>(l.microBatchSize) * m.seq;
  const double scores = static_cast<double>(l.microBatchSize) * m.heads * m.seq * m.seq;
  return tokens * (m.hidden * n.replicatedPerToken + n.replicatedFixedPerToken) +
         tokens * splitActivationElements(m) * n.activationBytes / l.tp +
         scores * n.scoreBytes / l.tp;
}

namespace {

double tokenEmbeddingParams(const ModelShape& m, int tp) {
  const double tokens = static_cast<double>(m.vocab) * m.hidden;
  return m.numerics.vocabParallel ? tokens / tp : tokens;
}

// The LM head's buffers besides its input: the final norm's output and
// statistics, and the logits (their gradient overwrites them).
double headActivationBytes(const ModelShape& m, const Layout& l) {
  const Numerics& n = m.numerics;
  const double tokens = static_cast<double>(l.microBatchSize) * m.seq;
  const double vocab = n.vocabParallel ? static_cast<double>(m.vocab) / l.tp : m.vocab;
  return tokens *
         (m.hidden * n.activationBytes + n.replicatedFixedPerToken / 2 + vocab * n.logitBytes);
}

}  // namespace

double stageParams(const ModelShape& m, const Layout& l, int stage) {
  double params = layersOnStage(m.layers, stage, l.pp) * layerParamsPerRank(m, l.tp);
  if (stage == 0) params += embeddingParamsPerRank(m, l.tp);
  if (stage == l.pp - 1) {
    // A tied head needs its own copy of the token embedding when it sits on
    // another stage than the embedding; an untied one always has its matrix.
    if (!m.tiedEmbedding || l.pp > 1) params += tokenEmbeddingParams(m, l.tp);
    params += (m.biases ? 2.0 : 1.0) * m.hidden;
  }
  return params;
}

double stageActivationBytes(const ModelShape& m, const Layout& l, int stage) {
  const int layers = layersOnStage(m.layers, stage, l.pp);
  const int inFlight = inFlightMicroBatches(l.microBatches(m), stage, l.pp);
  const double tokens = static_cast<double>(l.microBatchSize) * m.seq;
  const double boundary = tokens * m.hidden * m.numerics.activationBytes;
  const double layer = layerActivationBytes(m, l);
  const bool last = stage == l.pp - 1;
  const double stageOutput = last ? boundary : 0.0;
  const double head = last ? headActivationBytes(m, l) : 0.0;
  if (!l.checkpoint) return inFlight * layers * layer + stageOutput + head;
  // Kept inputs, plus the larger of one layer being (re)computed (its input is
  // among the kept ones) and the head.
  return inFlight * layers * boundary + stageOutput + std::max(layer - boundary, head);
}

MemoryBreakdown memoryPerGpu(const ModelShape& m, const Layout& l) {
  MemoryBreakdown best;
  for (const int stage : {0, l.pp - 1}) {
    MemoryBreakdown b;
    const Numerics& n = m.numerics;
    b.params = stageParams(m, l, stage);
    b.weights = b.params * n.weightBytes;
    b.gradients = b.params * n.gradBytes;
    b.optimizer = b.params * n.optimizerBytes / (l.zero1 ? l.dp : 1);
    b.residual = l.compression != Compression::None ? b.params * 4.0 : 0.0;
    b.activations = stageActivationBytes(m, l, stage);
    if (b.total() > best.total()) best = b;
  }
  return best;
}

}  // namespace loom::plan
