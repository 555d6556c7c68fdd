#include "compute_model.h"

#include "stage_shape.h"

namespace loom::plan {

double modelFlopsPerStep(const ModelShape& m, bool checkpoint) {
  const double c = checkpoint ? 1.0 : 0.0;
  const double tokens = static_cast<double>(m.globalBatch) * m.seq;
  const double layerParams = layerParamsPerRank(m, 1);
  return (6 + 2 * c) * m.layers * layerParams * tokens +
         (12 + 4 * c) * m.layers * tokens * m.seq * m.hidden + 6.0 * tokens * m.vocab * m.hidden;
}

double stageFlopsPerMicroBatch(const ModelShape& m, const Layout& l, int stage) {
  const double c = l.checkpoint ? 1.0 : 0.0;
  const double tokens = static_cast<double>(l.microBatchSize) * m.seq;
  const int layers = layersOnStage(m.layers, stage, l.pp);
  double flops =
      layers *
      ((6 + 2 * c) * layerParamsPerRank(m, 1) * tokens + (12 + 4 * c) * tokens * m.seq * m.hidden) /
      l.tp;
  if (stage == l.pp - 1) {
    const double head = 6.0 * tokens * m.vocab * m.hidden;
    flops += m.numerics.vocabParallel ? head / l.tp : head;
  }
  return flops;
}

double bubbleFraction(int stages, int microBatches) {
  return static_cast<double>(stages - 1) / microBatches;
}

}  // namespace loom::plan
