#include "app/trainer.h"

#include <algorithm>
#include <chrono>

#include "optim/grad_clip.h"

namespace loom::train {
namespace {

std::unique_ptr<GptStage> makeStage(const TrainOptions& o, ParallelGrid& grid) {
  const StageLayout layout = stageLayout(o.model.layers, grid.coords().pp, o.grid.pp);
  auto stage = std::make_unique<GptStage>(o.model, layout, grid.tensor(),
                                          static_cast<size_t>(o.grid.dp), o.checkpointActivations);
  stage->params().initialize(o.seed);
  return stage;
}

AdamWConfig adamConfig(const TrainOptions& o) {
  AdamWConfig c;
  c.weightDecay = o.weightDecay;
  c.holdZeroGradients = o.compression.codec.kind == loomCompressTopK && o.grid.dp > 1;
  return c;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Trainer::Trainer(loomComm_t world, const TrainOptions& options, const Corpus& corpus)
    : options_(options),
      corpus_(corpus),
      grid_(world, options.grid, &clock_),
      stage_(makeStage(options, grid_)),
      sync_(stage_->params(), grid_.data(), options.bucketElements, options.zero == 1,
            options.compression.codec, options.overlapDp),
      optimizer_(stage_->params(), sync_.ownedRanges(), adamConfig(options)),
      schedule_{options.lr, options.minLr, options.warmup, options.steps},
      runner_(*stage_, grid_.pipeline(), options.schedule) {}

std::vector<MicroBatch> Trainer::sampleMicroBatches(int step) const {
  // DP rank d draws global samples [d * perRank, (d + 1) * perRank).
  const int perRank = options_.samplesPerRank();
  const int size = options_.microBatchSize();
  std::vector<MicroBatch> batches;
  for (int k = 0; k < options_.microBatches; ++k) {
    const int first = grid_.coords().dp * perRank + k * size;
    batches.push_back(corpus_.sample(options_.seed, step, first, size, options_.model.seq));
  }
  return batches;
}

void Trainer::sumTiedEmbeddingGrads() {
  // The first stage's embedding and the last stage's LM head share one matrix;
  // each copy has half of its gradient.
  GroupComm& group = grid_.embedding();
  if (group.size() == 1) return;
  ParamStore& store = stage_->params();
  const int wte = store.index("wte");
  group.allReduceSum(store.grad(wte), store.param(wte).size());
}

StepStats Trainer::step(int step) {
  const auto start = std::chrono::steady_clock::now();
  const double commBefore = clock_.seconds();
  const uint64_t wireBefore = grid_.bytesSent();
  const uint64_t dpWireBefore = grid_.data().bytesSent();
  const uint64_t earlyBefore = sync_.bucketsStartedEarly();
  ParamStore& store = stage_->params();
  store.zeroGrads();
  stage_->meter().resetPeak();

  const float tokens = static_cast<float>(options_.batch) * options_.model.seq;
  if (options_.compression.codec.kind == loomCompressTopK) {
    sync_.setKeptFraction(keptFractionAt(options_.compression, step, options_.steps));
  }
  sync_.beginStep();
  const PipelineResult pipeline =
      runner_.run(sampleMicroBatches(step), 1.0f / tokens,
                  [&](size_t offset) { sync_.gradientsFinalFrom(offset); });
  sumTiedEmbeddingGrads();
  sync_.reduceGradients();
  const double norm = globalGradNorm(store, sync_.normRanges(), grid_.world());
  const float lr = schedule_.at(step);
  optimizer_.step(store, lr, clipFactor(norm, options_.gradClip));
  sync_.gatherParameters();

  const double seconds = secondsSince(start);
  // One reduction for the report. The loss lives on the last stage, where every
  // TP rank holds the same value: TP rank 0 contributes it.
  const GridCoords& c = grid_.coords();
  const bool reportsLoss = stage_->layout().isLast() && c.tp == 0;
  double sums[] = {
      reportsLoss ? pipeline.lossSum : 0.0,
      seconds,
      clock_.seconds() - commBefore,
      static_cast<double>(grid_.bytesSent() - wireBefore),
      static_cast<double>(sync_.payloadBytes()),
      static_cast<double>(grid_.data().bytesSent() - dpWireBefore),
      pipeline.wallSeconds > 0 ? 1.0 - pipeline.busySeconds / pipeline.wallSeconds : 0.0,
      static_cast<double>(sync_.bucketsStartedEarly() - earlyBefore),
  };
  grid_.world().allReduce(sums, std::size(sums));
  double peak = static_cast<double>(stage_->meter().peak());
  grid_.world().allReduce(&peak, 1, loomMax);

  const double ranks = grid_.world().size();
  StepStats s;
  s.step = step;
  s.loss = sums[0] / tokens;
  s.lr = lr;
  s.gradNorm = norm;
  s.seconds = sums[1] / ranks;
  s.tokensPerSecond = tokens / s.seconds;
  s.commFraction = sums[2] / sums[1];
  s.wireBytes = sums[3];
  s.dpPayloadBytes = sums[4];
  s.dpWireBytes = sums[5];
  s.bubble = sums[6] / ranks;
  s.peakActivationBytes = peak;
  s.dpBucketsOverlapped = sums[7];
  return s;
}

}  // namespace loom::train
