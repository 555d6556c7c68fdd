#include "thread_ranks.h"

#include <exception>
#include <thread>

#include "app/training_loop.h"
#include "math/kernels.h"

namespace loom::train::testing {

TrainOptions tinyOptions(int dp, int tp, int pp) {
  TrainOptions o;
  o.grid = {dp, tp, pp};
  o.model.layers = 2;
  o.model.dModel = 32;
  o.model.heads = 4;
  o.model.seq = 16;
  o.batch = 8;
  o.microBatches = 2;
  o.steps = 10;
  o.lr = 1e-2f;
  o.minLr = 1e-3f;
  o.warmup = 2;
  o.gradClip = 0.5f;
  o.bucketElements = 3000;
  o.syntheticBytes = 1 << 15;
  return o;
}

std::vector<StepStats> trainOnThreads(const TrainOptions& o) {
  math::setThreads(1);
  const int n = o.grid.size();
  const Corpus corpus = Corpus::synthetic(o.seed, o.syntheticBytes);
  std::vector<loomComm_t> comms(n);
  loom::check(loomCommInitAll(comms.data(), n, nullptr));
  std::vector<std::vector<StepStats>> stats(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      try {
        Trainer trainer(comms[r], o, corpus);
        runTraining(trainer, o, [&](const StepStats& s) { stats[r].push_back(s); });
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (loomComm_t c : comms) loomCommDestroy(c);
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return stats[0];
}

}  // namespace loom::train::testing
