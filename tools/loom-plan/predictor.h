// Predicted step of every layout, and the ranking. A step of a pipeline with
// m micro-batches, slowest stage compute t_c and TP time t_tp per micro-batch:
//
//   compute = m·t_c            tp = m·t_tp          bubble = (p - 1)·(t_c + t_tp)
//   pp = 2·(m + p - 1)·t_send  dp = (1 - overlap)·t_dp
//   step = compute + tp + bubble + pp + dp
//
// so the bubble is (p - 1)/m of the busy time, as 1F1B's.
#pragma once

#include <string>
#include <vector>

#include "comm_model.h"
#include "layout.h"
#include "memory_model.h"
#include "model_shape.h"
#include "rank_placement.h"

namespace loom::plan {

struct Hardware {
  double tflops = 0;        ///< dense FLOP/s each GPU achieves, in 1e12
  double memoryBytes = 0;   ///< usable memory per GPU
  int concurrentRanks = 0;  ///< ranks that compute at once (CPU cores); 0: all
};

struct Prediction {
  Layout layout;
  MemoryBreakdown memory;
  bool fits = true;
  double computeSeconds = 0;
  double tpSeconds = 0;
  double bubbleSeconds = 0;
  double ppSeconds = 0;
  double dpSeconds = 0;  ///< exposed
  double stepSeconds = 0;
  double tflopsPerGpu = 0;  ///< modelFlopsPerStep / step / GPUs
  double tokensPerSecond = 0;
  double exposedCommSeconds() const { return tpSeconds + ppSeconds + dpSeconds; }
};

Prediction predict(const ModelShape& m, const Layout& l, const Hardware& hw,
                   const CommOptions& comm, RankPlacement& placement);

/// Every layout predicted; fitting ones first by step time (ties: less memory),
/// then those that do not fit, by memory.
std::vector<Prediction> rankLayouts(const ModelShape& m, const std::vector<Layout>& layouts,
                                    const Hardware& hw, const CommOptions& comm,
                                    RankPlacement& placement);

/// Why `best` beats `other`, in a sentence naming the terms that differ most.
std::string whyBetter(const Prediction& best, const Prediction& other);

}  // namespace loom::plan
