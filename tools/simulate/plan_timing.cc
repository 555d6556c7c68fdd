#include "tools/simulate/plan_timing.h"

#include <map>
#include <utility>

#include "collectives/algorithms.h"
#include "core/error.h"

namespace loom::tuner {
namespace {

Step makeStep(StepKind kind, int sendPeer, int recvPeer, size_t count) {
  Step s;
  s.kind = kind;
  s.sendPeer = sendPeer;
  s.recvPeer = recvPeer;
  s.count = count;
  return s;
}

// Plans speak plan positions; the simulation speaks ranks.
void placeOnRanks(RankPlan& plan, const std::vector<int>& order) {
  for (auto& stream : plan.streams) {
    for (Step& s : stream) {
      if (s.sendPeer >= 0) s.sendPeer = order[s.sendPeer];
      if (s.recvPeer >= 0) s.recvPeer = order[s.recvPeer];
    }
  }
}

RankPlan placedPlan(Collective collective, Algorithm algorithm, const std::vector<int>& order,
                    int position, size_t count) {
  PlanRequest req;
  req.collective = collective;
  req.algorithm = algorithm;
  req.rank = position;
  req.nranks = static_cast<int>(order.size());
  req.count = count;
  RankPlan plan = makePlan(req);
  placeOnRanks(plan, order);
  return plan;
}

using Jobs = std::vector<std::vector<TimedJob>>;

Jobs ringJobs(const TunerTopology& t, Collective collective, size_t count, int channels) {
  Jobs jobs(t.nranks);
  const auto& set = t.ringSets[channels - 1];
  for (int k = 0; k < channels; ++k) {
    const auto& order = set[k].order;
    for (int p = 0; p < t.nranks; ++p) {
      jobs[order[p]].push_back(
          {placedPlan(collective, Algorithm::Ring, order, p, chunkSize(count, channels, k)), k});
    }
  }
  return jobs;
}

Jobs treeJobs(const TunerTopology& t, Collective collective, size_t count) {
  Jobs jobs(t.nranks);
  for (int p = 0; p < t.nranks; ++p) {
    jobs[t.treeOrder[p]].push_back(
        {placedPlan(collective, Algorithm::Tree, t.treeOrder, p, count), 0});
  }
  return jobs;
}

Jobs directJobs(const TunerTopology& t, size_t count) {
  Jobs jobs(t.nranks);
  for (int r = 0; r < t.nranks; ++r) jobs[r].push_back({directTimingPlan(r, t.nranks, count), 0});
  return jobs;
}

// One simulation per phase: a phase starts when the last one ended.
TimedResult phasedTime(const std::vector<std::vector<RankPlan>>& phases, const LinkCostFn& costs,
                       const TimedSimOptions& options) {
  TimedResult total;
  for (size_t phase = 0; phase < phases.front().size(); ++phase) {
    Jobs jobs(phases.size());
    for (size_t r = 0; r < phases.size(); ++r) jobs[r].push_back({phases[r][phase], 0});
    const TimedResult part = simulateTime(jobs, costs, options);
    total.microseconds += part.microseconds;
    total.messages += part.messages;
    total.events += part.events;
  }
  return total;
}

TimedResult hierarchicalTime(const TunerTopology& t, size_t count, const TimedSimOptions& options) {
  const Hierarchy& h = *t.hierarchy;
  // Every message of the phases travels along one of the hierarchy's rings.
  std::map<std::pair<int, int>, LinkCost> hops;
  for (const auto* rings : {&h.local, &h.across}) {
    for (const RingChannel& ring : *rings) {
      for (size_t p = 0; p < ring.order.size(); ++p) {
        hops[{ring.order[p], ring.order[(p + 1) % ring.order.size()]}] = ring.hops[p];
      }
    }
  }
  const LinkCostFn costs = [&](int, int from, int to) { return hops.at({from, to}); };
  std::vector<std::vector<RankPlan>> phases;
  phases.reserve(static_cast<size_t>(t.nranks));
  for (int r = 0; r < t.nranks; ++r) phases.push_back(hierarchicalAllReduce(h.hosts, r, count));
  return phasedTime(phases, costs, options);
}

TimedResult hostTreeTime(const TunerTopology& t, size_t count, const TimedSimOptions& options) {
  std::vector<std::vector<RankPlan>> phases;
  phases.reserve(static_cast<size_t>(t.nranks));
  for (int r = 0; r < t.nranks; ++r) {
    phases.push_back(hostTreeAllReduce(t.hostRanks, r, count, false));
  }
  return phasedTime(
      phases, [&t](int, int from, int to) { return t.pair(from, to); }, options);
}

// Ring channel k's hops cost what the ring search says they get with the
// other channels running, direct messages what they get beside the other
// ranks' sends of their round; any other pair costs its path alone.
LinkCostFn costsFor(const TunerTopology& t, const Candidate& c) {
  if (c.algorithm == Algorithm::Direct) {
    return [&t](int, int from, int to) { return t.directCost(from, to); };
  }
  if (c.algorithm != Algorithm::Ring) {
    return [&t](int, int from, int to) { return t.pair(from, to); };
  }
  std::vector<std::vector<int>> positions;
  for (const RingChannel& ring : t.ringSets[c.channels - 1]) {
    auto& at = positions.emplace_back(t.nranks, -1);
    for (size_t p = 0; p < ring.order.size(); ++p) at[ring.order[p]] = static_cast<int>(p);
  }
  return [&t, c, positions = std::move(positions)](int channel, int from, int to) {
    const RingChannel& ring = t.ringSets[c.channels - 1][channel];
    const int p = positions[channel][from];
    const int next = ring.order[(p + 1) % ring.order.size()];
    return next == to ? ring.hops[p] : t.pair(from, to);
  };
}

}  // namespace

RankPlan directTimingPlan(int rank, int nranks, size_t count) {
  RankPlan plan;
  auto& s = plan.streams.emplace_back();
  auto shard = [&](int owner) { return chunkSize(count, nranks, owner); };
  auto peer = [&](int k) { return (rank + k) % nranks; };
  auto from = [&](int k) { return (rank - k + nranks) % nranks; };
  for (int k = 1; k < nranks; ++k)
    s.push_back(makeStep(StepKind::Send, peer(k), -1, shard(peer(k))));
  for (int k = 1; k < nranks; ++k) {
    s.push_back(makeStep(StepKind::RecvReduce, -1, from(k), shard(rank)));
  }
  for (int k = 1; k < nranks; ++k) s.push_back(makeStep(StepKind::Send, peer(k), -1, shard(rank)));
  for (int k = 1; k < nranks; ++k)
    s.push_back(makeStep(StepKind::Recv, -1, from(k), shard(from(k))));
  return plan;
}

TimedResult simulateCandidate(const TunerTopology& topology, Collective collective, size_t bytes,
                              const Candidate& candidate) {
  // The model validates the candidate; its answer is not used.
  (void)predictMicroseconds(topology, collective, 0, candidate);
  const size_t count = bytes / kModelElementBytes;
  TimedSimOptions options;
  options.elementBytes = kModelElementBytes;
  options.sliceBytes = candidate.chunkBytes;
  options.fifoDepth = topology.linkSlots;
  if (candidate.algorithm == Algorithm::Hierarchical) {
    return hierarchicalTime(topology, count, options);
  }
  if (candidate.algorithm == Algorithm::HostTree) return hostTreeTime(topology, count, options);
  Jobs jobs;
  switch (candidate.algorithm) {
    case Algorithm::Ring:
      jobs = ringJobs(topology, collective, count, candidate.channels);
      break;
    case Algorithm::Tree:
      jobs = treeJobs(topology, collective, count);
      break;
    default:
      jobs = directJobs(topology, count);
      break;
  }
  return simulateTime(jobs, costsFor(topology, candidate), options);
}

}  // namespace loom::tuner
