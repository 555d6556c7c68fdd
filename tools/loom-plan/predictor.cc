#include "predictor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "compute_model.h"

namespace loom::plan {

Prediction predict(const ModelShape& m, const Layout& l, const Hardware& hw,
                   const CommOptions& comm, RankPlacement& placement) {
  Prediction p;
  p.layout = l;
  p.memory = memoryPerGpu(m, l);
  p.fits = p.memory.total() <= hw.memoryBytes;

  // Ranks beyond the cores that run them share those cores' rate.
  double rate = hw.tflops * 1e12;
  if (hw.concurrentRanks > 0 && l.gpus() > hw.concurrentRanks) {
    rate *= static_cast<double>(hw.concurrentRanks) / l.gpus();
  }
  const double slowest =
      std::max(stageFlopsPerMicroBatch(m, l, 0), stageFlopsPerMicroBatch(m, l, l.pp - 1));
  const double perMicroBatch = slowest / rate;
  const CommTimes times = communicationTimes(m, l, comm, placement);
  const int micro = l.microBatches(m);

  p.computeSeconds = micro * perMicroBatch;
  p.tpSeconds = micro * times.tpPerMicroBatch;
  p.bubbleSeconds = (l.pp - 1) * (perMicroBatch + times.tpPerMicroBatch);
  p.ppSeconds = 2.0 * (micro + l.pp - 1) * times.ppPerTransfer;
  p.dpSeconds = (1.0 - comm.dpOverlap) * times.dpPerStep;
  p.stepSeconds = p.computeSeconds + p.tpSeconds + p.bubbleSeconds + p.ppSeconds + p.dpSeconds;
  p.tflopsPerGpu = modelFlopsPerStep(m, l.checkpoint) / p.stepSeconds / l.gpus() / 1e12;
  p.tokensPerSecond = static_cast<double>(m.globalBatch) * m.seq / p.stepSeconds;
  return p;
}

std::vector<Prediction> rankLayouts(const ModelShape& m, const std::vector<Layout>& layouts,
                                    const Hardware& hw, const CommOptions& comm,
                                    RankPlacement& placement) {
  std::vector<Prediction> all;
  all.reserve(layouts.size());
  for (const Layout& l : layouts) all.push_back(predict(m, l, hw, comm, placement));
  std::stable_sort(all.begin(), all.end(), [](const Prediction& a, const Prediction& b) {
    if (a.fits != b.fits) return a.fits;
    if (!a.fits) return a.memory.total() < b.memory.total();
    if (a.stepSeconds != b.stepSeconds) return a.stepSeconds < b.stepSeconds;
    return a.memory.total() < b.memory.total();
  });
  return all;
}

std::string whyBetter(const Prediction& best, const Prediction& other) {
  if (!other.fits) {
    return fmt::format("{} needs {:.1f} GB per GPU and does not fit", other.layout.label(),
                       other.memory.total() / 1e9);
  }
  std::array<std::pair<const char*, double>, 5> gains = {{
      {"compute", other.computeSeconds - best.computeSeconds},
      {"TP communication", other.tpSeconds - best.tpSeconds},
      {"pipeline bubble", other.bubbleSeconds - best.bubbleSeconds},
      {"PP transfers", other.ppSeconds - best.ppSeconds},
      {"DP communication", other.dpSeconds - best.dpSeconds},
  }};
  std::sort(gains.begin(), gains.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text =
      fmt::format("{:.3g} s faster than {} ({:.1f}%): ", other.stepSeconds - best.stepSeconds,
                  other.layout.label(), 100.0 * (other.stepSeconds / best.stepSeconds - 1));
  text += fmt::format("{} {:+.3g} s", gains[0].first, -gains[0].second);
  if (gains[1].second > 0) text += fmt::format(", {} {:+.3g} s", gains[1].first, -gains[1].second);
  const auto& worst = gains.back();
  if (worst.second < 0) text += fmt::format(" (but {} {:+.3g} s)", worst.first, -worst.second);
  return text;
}

}  // namespace loom::plan
