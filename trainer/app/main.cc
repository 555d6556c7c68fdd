// loom-train: `loomrun -n 4 loom-train --dp 2 --tp 2 --steps 200`.
#include <cstdio>
#include <exception>
#include <memory>

#include "app/checkpoint.h"
#include "app/command_line.h"
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
        if (!leader) return;
        if (!options.quiet) std::printf("%s\n", progressLine(stats, options).c_str());
        std::fflush(stdout);
        if (log) log->write(stats);
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
