#include "app/trainer.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/checkpoint.h"
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

/// Every rank's `mine` (empty: no failure) gathered over `world`; returns the
/// first rank's failure as "rank R: why", or "" when no rank failed. So every
/// rank of a collective step that failed somewhere reports the same cause.
std::string firstFailure(GroupComm& world, const std::string& mine) {
  constexpr size_t kBytes = 512;
  std::vector<char> all(kBytes * static_cast<size_t>(world.size()));
  std::vector<char> own(kBytes, '\0');
  std::copy_n(mine.begin(), std::min(mine.size(), kBytes - 1), own.begin());
  loom::check(loomAllGather(own.data(), all.data(), kBytes, loomUint8, world.raw(), nullptr));
  for (int r = 0; r < world.size(); ++r) {
    const char* text = all.data() + kBytes * static_cast<size_t>(r);
    if (text[0] != '\0') return "rank " + std::to_string(r) + ": " + text;
  }
  return "";
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

Trainer::Snapshot Trainer::snapshot() const {
  Snapshot s;
  const ParamStore& store = stage_->params();
  for (const Param& p : store.params()) {
    const float* begin = store.values().data() + p.offset;
    s.params.insert(s.params.end(), begin, begin + p.size());
  }
  s.optimizer = optimizer_.state();
  return s;
}

void Trainer::restore(const Snapshot& snapshot) {
  ParamStore& store = stage_->params();
  size_t total = 0;
  for (const Param& p : store.params()) total += p.size();
  if (total != snapshot.params.size()) {
    throw std::invalid_argument("a snapshot of " + std::to_string(snapshot.params.size()) +
                                " parameters does not fit this stage's " + std::to_string(total));
  }
  optimizer_.restore(snapshot.optimizer);
  size_t at = 0;
  for (const Param& p : store.params()) {
    std::copy_n(snapshot.params.begin() + static_cast<std::ptrdiff_t>(at), p.size(),
                store.values().begin() + static_cast<std::ptrdiff_t>(p.offset));
    at += p.size();
  }
}

void Trainer::save(const std::string& dir, int nextStep) {
  GroupComm& world = grid_.world();
  RankState state;
  state.nextStep = nextStep;
  state.values = stage_->params().values();
  state.optimizer = optimizer_.state();
  std::string why;
  try {
    writeRankState(dir, world.rank(), world.size(), options_, state);
  } catch (const std::exception& e) {
    why = e.what();
  }
  // The manifest marks the checkpoint complete: only once every file is in.
  if (const std::string failure = firstFailure(world, why); !failure.empty()) {
    throw std::runtime_error(failure);
  }
  if (world.rank() == 0) {
    try {
      writeManifest(dir, world.size(), options_, nextStep);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  // Nobody goes on before the manifest is there.
  if (const std::string failure = firstFailure(world, why); !failure.empty()) {
    throw std::runtime_error(failure);
  }
}

int Trainer::resume(const std::string& dir) {
  GroupComm& world = grid_.world();
  RankState state;
  std::string why;
  try {
    state = readRankState(dir, world.rank(), world.size(), options_);
    if (state.values.size() != stage_->params().size()) {
      throw std::runtime_error("checkpoint " + dir + ": " + std::to_string(state.values.size()) +
                               " parameters, this rank has " +
                               std::to_string(stage_->params().size()));
    }
    optimizer_.restore(std::move(state.optimizer));
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (const std::string failure = firstFailure(world, why); !failure.empty()) {
    throw std::runtime_error(failure);
  }
  double steps[] = {static_cast<double>(state.nextStep), -static_cast<double>(state.nextStep)};
  world.allReduce(steps, 2, loomMax);
  if (steps[0] != -steps[1]) {
    throw std::runtime_error("checkpoint " + dir + " mixes files of different steps");
  }
  stage_->params().values() = std::move(state.values);
  return state.nextStep;
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
