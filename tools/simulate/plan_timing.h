// Candidates timed by the plan simulator instead of the closed-form model:
// the plans the executor would run (makePlan's ring and tree plans placed on
// the tuner's rank orders, one job per ring channel; for the direct
// algorithm, its data movement written as steps), replayed by simulateTime on
// the TunerTopology's link costs. Tests hold the model to these times and
// loom-topo prints them next to the model's.
#pragma once

#include "collectives/plan.h"
#include "tools/simulate/timed_simulator.h"
#include "tuner/cost_model.h"

namespace loom::tuner {

/// The direct algorithm's data movement as one stream of steps, for timing
/// only: send each peer (r+1, r+2, ...) its shard, reduce the shards received
/// from r-1, r-2, ..., then send the reduced own shard to every peer and
/// receive theirs. Shards are chunkSize(count, nranks, owner).
RankPlan directTimingPlan(int rank, int nranks, size_t count);

/// Simulated time of `candidate` for `collective` of `bytes` (as in
/// predictMicroseconds). Throws what predictMicroseconds throws for a
/// candidate the model does not cover.
TimedResult simulateCandidate(const TunerTopology& topology, Collective collective, size_t bytes,
                              const Candidate& candidate);

}  // namespace loom::tuner
