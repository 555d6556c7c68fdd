// Hierarchical all-reduce: the network carries each byte once per host, not
// once per rank. Inside every host a ring reduce-scatter leaves local position
// p with shard p of the host's sum; the ranks at position p of every host then
// all-reduce that shard with a ring across hosts (L rings at once, one per
// local position); a ring all-gather inside each host spreads the shards.
// Phases run one after another: the executor pipelines slices within a plan,
// and shard p's slices in the cross-host ring are not the slices the
// intra-host ring produced in the same order, so a phase boundary is a wait.
#include <algorithm>

#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "collectives/algorithms/steps.h"
#include "core/error.h"

namespace loom {
namespace {

struct Seat {
  int host = -1;
  int position = -1;
};

Seat findSeat(const HostGroups& hosts, int rank) {
  for (size_t h = 0; h < hosts.size(); ++h) {
    const auto& group = hosts[h];
    const auto it = std::find(group.begin(), group.end(), rank);
    if (it != group.end()) {
      return {static_cast<int>(h), static_cast<int>(it - group.begin())};
    }
  }
  raise(ErrorCode::InvalidArgument, "hierarchical all-reduce: rank {} is on none of the {} hosts",
        rank, hosts.size());
}

/// Plans of a later phase work in place on [offset, offset + count) of the output.
RankPlan onOutputShard(RankPlan plan, size_t offset) {
  for (auto& stream : plan.streams) {
    for (Step& s : stream) {
      for (BufferRef* ref : {&s.src, &s.dst}) {
        ref->buffer = BufferId::Output;
        ref->offset += offset;
      }
    }
  }
  return plan;
}

/// The reduction's final transform (avg's division) belongs to one phase only.
RankPlan withoutFinalize(RankPlan plan) {
  for (auto& stream : plan.streams) {
    for (Step& s : stream) s.finalize = false;
  }
  return plan;
}

PlanRequest request(Collective c, Algorithm a, int rank, int nranks, size_t count, bool inPlace) {
  PlanRequest req;
  req.collective = c;
  req.algorithm = a;
  req.rank = rank;
  req.nranks = nranks;
  req.root = 0;
  req.count = count;
  req.inPlace = inPlace;
  return req;
}

}  // namespace

bool hierarchicalFits(const HostGroups& hosts) {
  if (hosts.size() < 2 || hosts.front().size() < 2) return false;
  return std::all_of(hosts.begin(), hosts.end(),
                     [&](const std::vector<int>& g) { return g.size() == hosts.front().size(); });
}

std::vector<RankPlan> hierarchicalAllReduce(const HostGroups& hosts, int rank, size_t count,
                                            int channels) {
  if (!hierarchicalFits(hosts)) {
    raise(ErrorCode::InvalidArgument,
          "hierarchical all-reduce needs at least 2 hosts with the same number (at least 2) of "
          "ranks on each; got {} hosts",
          hosts.size());
  }
  const Seat seat = findSeat(hosts, rank);
  const auto& local = hosts[static_cast<size_t>(seat.host)];
  const int localRanks = static_cast<int>(local.size());
  const int nhosts = static_cast<int>(hosts.size());

  std::vector<int> across;  // the ranks at this position on every host, by host
  across.reserve(hosts.size());
  for (const auto& group : hosts) across.push_back(group[static_cast<size_t>(seat.position)]);

  PlanRequest shard = request(Collective::AllReduce, Algorithm::Ring, seat.host, nhosts,
                              chunkSize(count, localRanks, seat.position), true);
  shard.channels = channels;

  std::vector<RankPlan> phases;
  // The average's division happens once, where the cross-host ring completes a sum.
  phases.push_back(placePlan(
      steps::oneStream(detail::ringReduceScatterChunks(seat.position, localRanks, count, false)),
      local));
  phases.push_back(placePlan(
      onOutputShard(makePlan(shard), chunkOffset(count, localRanks, seat.position)), across));
  phases.push_back(placePlan(
      steps::oneStream(detail::ringAllGatherChunks(seat.position, localRanks, count)), local));
  for (RankPlan& phase : phases) detail::dropEmpty(phase);
  return phases;
}

bool hostTreeFits(const HostGroups& hosts) {
  return hosts.size() >= 2 && std::none_of(hosts.begin(), hosts.end(),
                                           [](const std::vector<int>& g) { return g.empty(); });
}

// For small messages, where hops cost more than bytes: each host reduces
// along a chain to its first rank (the leader), the leaders all-reduce with a
// double binary tree, and each leader broadcasts down its chain. Hosts may
// hold different numbers of ranks.
std::vector<RankPlan> hostTreeAllReduce(const HostGroups& hosts, int rank, size_t count,
                                        bool inPlace) {
  if (!hostTreeFits(hosts)) {
    raise(ErrorCode::InvalidArgument,
          "the host tree all-reduce needs at least 2 hosts, none empty; got {} hosts",
          hosts.size());
  }
  const Seat seat = findSeat(hosts, rank);
  const auto& local = hosts[static_cast<size_t>(seat.host)];
  const int localRanks = static_cast<int>(local.size());
  std::vector<int> leaders;
  leaders.reserve(hosts.size());
  for (const auto& group : hosts) leaders.push_back(group.front());

  std::vector<RankPlan> phases;
  phases.push_back(
      placePlan(withoutFinalize(makePlan(request(Collective::Reduce, Algorithm::Ring, seat.position,
                                                 localRanks, count, inPlace))),
                local));
  if (seat.position == 0) {
    phases.push_back(
        placePlan(onOutputShard(makePlan(request(Collective::AllReduce, Algorithm::Tree, seat.host,
                                                 static_cast<int>(hosts.size()), count, true)),
                                0),
                  leaders));
  } else {
    phases.emplace_back();
  }
  phases.push_back(
      placePlan(onOutputShard(makePlan(request(Collective::Broadcast, Algorithm::Ring,
                                               seat.position, localRanks, count, true)),
                              0),
                local));
  for (RankPlan& phase : phases) detail::dropEmpty(phase);
  return phases;
}

}  // namespace loom
