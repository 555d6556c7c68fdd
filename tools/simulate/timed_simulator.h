// Timed plan simulator: how long plans take on links of given latency and
// bandwidth. It replays every rank's plan as discrete events, with the
// executor's ordering (slices of `sliceBytes`, slice i of every step before
// slice i + 1, one cursor per job or per stream) and these rules:
//   - a step that receives waits until its message has arrived;
//   - a step that sends waits for room in the FIFO to its peer (`fifoDepth`
//     messages sent and not yet received) and for the directed link to be
//     free; the message then keeps the sender and the link busy for
//     bytes / bandwidth and arrives `latency` later;
//   - copies and reductions take no time (links are what the model is about).
// It moves no data (simulatePlans checks results); it is independent of the
// tuner's closed-form model, which tests compare against it.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "collectives/plan.h"
#include "tools/simulate/simulator.h"
#include "tuner/link_cost.h"

namespace loom {

/// Cost of messages from rank `from` to rank `to` on channel `channel`.
/// Channels have their own links: rings of several channels run on lanes or
/// links of their own (the ring search accounts for shared links in the
/// bandwidths it reports per channel).
using LinkCostFn = std::function<LinkCost(int channel, int from, int to)>;

/// One plan on one rank; a rank's jobs run concurrently.
struct TimedJob {
  RankPlan plan;
  int channel = 0;  ///< which links its messages use
};

struct TimedSimOptions {
  size_t elementBytes = 4;                ///< bytes per plan element (>= 1)
  size_t sliceBytes = size_t{256} << 10;  ///< executor slice (>= elementBytes)
  size_t fifoDepth = 2;                   ///< messages in flight per link (>= 1)
  SimStreamOrder streamOrder = SimStreamOrder::Merged;
};

struct TimedResult {
  double microseconds = 0.0;  ///< until the last rank finished its last step
  size_t messages = 0;
  size_t events = 0;  ///< cursor wake-ups processed (a measure of simulation work)
};

/// Simulates `jobs[rank]`. Throws Error(InvalidArgument) for bad options or a
/// non-positive bandwidth on a link in use, and Error(InternalError) naming
/// the waiting ranks when the plans deadlock.
TimedResult simulateTime(const std::vector<std::vector<TimedJob>>& jobs, const LinkCostFn& costs,
                         const TimedSimOptions& options);

}  // namespace loom
