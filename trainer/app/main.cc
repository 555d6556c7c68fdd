// loom-train: `loomrun -n 4 loom-train --dp 2 --tp 2 --steps 200`.
#include <cstdio>
#include <exception>
#include <memory>

#include "app/checkpoint.h"
#include "app/command_line.h"
#include "app/elastic.h"
#include "app/grow_back.h"
#include "app/launch.h"
#include "app/step_report.h"
#include "app/trainer.h"
#include "app/training_loop.h"
#include "math/kernels.h"

namespace loom::train {
namespace {

/// Loss, throughput and communication over the run, printed at the end.
class RunSummary {
 public:
  void add(const StepStats& s) {
    if (count_ == 0) firstLoss_ = s.loss;
    lastLoss_ = s.loss;
    ++count_;
    if (count_ == 1) return;  // the first step pays for warm-up; leave it out of the means
    seconds_ += s.seconds;
    commSeconds_ += s.commFraction * s.seconds;
    tokensPerSecond_ += s.tokensPerSecond;
    peakActivation_ = std::max(peakActivation_, s.peakActivationBytes);
  }
  void print() const {
    const int timed = count_ > 1 ? count_ - 1 : 1;
    std::printf(
        "loom-train: loss %.4f -> %.4f over %d steps | mean %.0f tok/s | comm %.1f%% | "
        "peak activations %.2f MB\n",
        firstLoss_, lastLoss_, count_, tokensPerSecond_ / timed,
        seconds_ > 0 ? 100.0 * commSeconds_ / seconds_ : 0.0, peakActivation_ / 1e6);
  }

 private:
  int count_ = 0;
  double firstLoss_ = 0, lastLoss_ = 0;
  double seconds_ = 0, commSeconds_ = 0, tokensPerSecond_ = 0, peakActivation_ = 0;
};

// Every rank of a bad run finds the same error, and only the leader says it.
// None leaves before the leader has: a launcher stops all ranks when the first
// one exits, and would cut the leader off before its line.
void leaveTogether(loom::Comm& world) {
  double said = 0;
  loomAllReduce(&said, &said, 1, loomFloat64, loomSum, world.get(), nullptr);
}

void reportStep(const StepStats& stats, const TrainOptions& options, CsvLog* log) {
  if (!options.quiet) std::printf("%s\n", progressLine(stats, options).c_str());
  std::fflush(stdout);
  if (log) log->write(stats);
}

// The CSV log stays with the rank that started as rank 0; if it dies, the log
// ends there and the new rank 0 goes on printing progress lines.
int runElastic(loom::Comm& world, const TrainOptions& options, const Corpus& corpus, bool joining) {
  const int startRank = joining ? -1 : world.rank();
  std::unique_ptr<CsvLog> log;
  RunSummary summary;
  ElasticCallbacks callbacks;
  callbacks.onStart = [&](Trainer& trainer, bool leader) {
    if (!leader) return;
    std::printf("%s\n", runBanner(options, trainer.stage().params().size(), world.size()).c_str());
    if (!options.logPath.empty()) log = std::make_unique<CsvLog>(options.logPath);
  };
  callbacks.onStep = [&](const StepStats& stats, bool leader) {
    summary.add(stats);
    if (leader) reportStep(stats, options, log.get());
  };
  callbacks.onRecovered = [&](int step, int ranks, int dp, double seconds, bool leader) {
    if (!leader) return;
    std::printf(
        "loom-train: lost a rank; redoing step %d on %d ranks (dp %d), rebuilt in %.0f ms\n",
        step + 1, ranks, dp, seconds * 1e3);
    std::fflush(stdout);
  };
  callbacks.onGrown = [&](int step, int ranks, int dp, double seconds, bool leader) {
    if (!leader) return;
    std::printf("loom-train: grew back to %d ranks (dp %d) at step %d in %.0f ms\n", ranks, dp,
                step + 1, seconds * 1e3);
    std::fflush(stdout);
  };
  callbacks.onGrowFailed = [&](int step, int ranks, int dp, bool leader) {
    if (!leader) return;
    std::printf("loom-train: growing back failed; step %d goes on with %d ranks (dp %d)\n",
                step + 1, ranks, dp);
    std::fflush(stdout);
  };
  if (!runElasticTraining(world, options, corpus, callbacks, joining)) {
    std::fprintf(stderr, "loom-train: rank %d: %s; it leaves\n", startRank,
                 joining ? "the others finished without taking it in"
                         : "its data-parallel replica lost a rank");
    return 0;
  }
  if (world.rank() == 0) summary.print();
  return 0;
}

int run(int argc, char** argv) {
  TrainOptions options;
  std::string error;
  switch (parseCommandLine(argc, argv, &options, &error)) {
    case ParseOutcome::kExitSuccess:
      return 0;
    case ParseOutcome::kError:
      if (launcherRankIsZero()) {
        std::fprintf(stderr, "loom-train: error: %s\n", error.c_str());
        std::fflush(stderr);
      }
      if (startedByLauncher()) {
        try {
          loom::Comm world = joinWorld();
          leaveTogether(world);
        } catch (const std::exception&) {  // exiting with 2 anyway
        }
      }
      return 2;
    case ParseOutcome::kRun:
      break;
  }
  math::setThreads(options.blasThreads);
  if (startedAsReplacement()) {
    // Started by `loomrun --respawn` in a dead rank's place: it joins the
    // survivors' world when they take it in, not the starting world.
    error = options.elastic ? validateOptions(options, options.grid.size())
                            : "a replacement rank (LOOM_REPLACEMENT=1) needs --elastic";
    if (!error.empty()) {
      std::fprintf(stderr, "loom-train: error: %s\n", error.c_str());
      return 2;
    }
    const Corpus corpus = options.dataPath.empty()
                              ? Corpus::synthetic(options.seed, options.syntheticBytes)
                              : Corpus::fromFile(options.dataPath);
    loom::Comm none;
    return runElastic(none, options, corpus, true);
  }
  loom::Comm world = joinWorld();
  const bool leader = world.rank() == 0;
  error = validateOptions(options, world.size());
  if (!error.empty()) {
    if (leader) {
      std::fprintf(stderr, "loom-train: error: %s\n", error.c_str());
      std::fflush(stderr);
    }
    leaveTogether(world);
    return 2;
  }
  const Corpus corpus = options.dataPath.empty()
                            ? Corpus::synthetic(options.seed, options.syntheticBytes)
                            : Corpus::fromFile(options.dataPath);
  if (options.elastic) return runElastic(world, options, corpus, false);
  Trainer trainer(world.get(), options, corpus);
  std::unique_ptr<CsvLog> log;
  if (leader) {
    std::printf("%s\n", runBanner(options, trainer.stage().params().size(), world.size()).c_str());
    if (!options.logPath.empty()) log = std::make_unique<CsvLog>(options.logPath);
  }
  RunSummary summary;
  runTraining(
      trainer, options,
      [&](const StepStats& stats) {
        summary.add(stats);
        if (leader) reportStep(stats, options, log.get());
      },
      [&](const std::string& from, int step) {
        if (leader) std::printf("loom-train: resumed from %s at step %d\n", from.c_str(), step);
      });
  if (leader) summary.print();
  if (leader && !options.savePath.empty()) {
    std::printf("loom-train: checkpoint in %s\n",
                checkpointDirectory(options.savePath, options.steps).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace loom::train

int main(int argc, char** argv) {
  try {
    return loom::train::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-train: error: %s\n", e.what());
    return 1;
  }
}
