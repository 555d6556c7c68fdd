#include "rank_placement.h"

#include <algorithm>

#include "core/error.h"
#include "tuner/tuner.h"

namespace loom::plan {

RankPlacement::RankPlacement(const topo::Topology& topology, int gpus)
    : topology_(topology), gpus_(gpus) {
  const std::vector<int> devices = topo::defaultRankNodes(topology);
  whole_.emplace(topology, devices);
  perHost_ = static_cast<int>(whole_->ranksOn(0).size());
  const int fileHosts = whole_->hostCount();
  if (gpus <= static_cast<int>(devices.size()) || fileHosts == 1) {
    const bool hasGpus = !topology.nodesOfKind(topo::NodeKind::Gpu).empty();
    if (hasGpus && gpus > static_cast<int>(devices.size())) {
      raise(ErrorCode::InvalidArgument,
            "--gpus {}: '{}' is one host of {} GPUs; give a file of two or more hosts to plan "
            "beyond it (the planner replicates its hosts)",
            gpus, topology.source, devices.size());
    }
    // Ranks beyond the devices share them, as loomrun places them on a CPU host.
    direct_ = topo::defaultRankNodes(topology, gpus);
    return;
  }
  if (gpus % perHost_ != 0) {
    raise(ErrorCode::InvalidArgument, "--gpus {} is not a whole number of hosts of {} GPUs in '{}'",
          gpus, perHost_, topology.source);
  }
}

int RankPlacement::hostsNeeded() const {
  if (!direct_.empty()) return whole_->hostCount() == 1 ? 1 : (gpus_ + perHost_ - 1) / perHost_;
  return gpus_ / perHost_;
}

const tuner::TunerTopology& RankPlacement::group(const std::vector<int>& ranks) {
  std::vector<int> key;
  std::vector<int> nodes;
  if (!direct_.empty()) {
    for (const int r : ranks) nodes.push_back(direct_[r]);
    key = nodes;
  } else {
    // Whole hosts in order of first use, and the local GPUs used on the first
    // (the groups of a layout use the same local GPUs on every host).
    std::vector<int> hosts;
    std::vector<int> locals;
    for (const int r : ranks) {
      const int host = r / perHost_;
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
      if (host == hosts.front()) locals.push_back(r % perHost_);
    }
    key = {-1, static_cast<int>(hosts.size())};
    key.insert(key.end(), locals.begin(), locals.end());
    const int used = std::min<int>(static_cast<int>(hosts.size()), 2);
    for (int h = 0; h < used; ++h) {
      for (const int local : locals) nodes.push_back(whole_->nodeOf(whole_->ranksOn(h)[local]));
    }
  }
  auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;
  tuner::TunerTopology model;
  // The runs planned are NCCL's, whose channels are not Loom's kernel
  // blocks: hops keep their links' bandwidth (no per-channel cap).
  const topo::HopOptions hops;
  if (key.front() != -1 || key[1] == 1) {
    model = tuner::tunerTopologyFor(topology_, nodes, hops);
  } else {
    const topo::RankGraph graph(topology_, nodes, hops);
    model = tuner::replicateHosts(graph, topo::searchRings(graph), key[1]);
  }
  return cache_.emplace(key, std::move(model)).first->second;
}

}  // namespace loom::plan
