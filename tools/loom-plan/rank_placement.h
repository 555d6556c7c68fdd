// Where a layout's ranks sit on the topology, and the tuner's view of any
// group of them. Ranks are numbered TP fastest, then DP, then PP (Megatron's
// order), so a TP group is consecutive GPUs of one host whenever tp divides
// the GPUs per host, and DP and PP groups stride across hosts. A file with
// fewer hosts than the job needs is grown on paper by the tuner's
// replicateHosts (every host a copy of the file's first).
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "topology/graph.h"
#include "topology/ring_search.h"
#include "tuner/tuner_topology.h"

namespace loom::plan {

class RankPlacement {
 public:
  /// Throws Error(InvalidArgument) when `gpus` ranks cannot be placed: more
  /// than a one-host GPU file holds, or not whole hosts of a multi-host file.
  RankPlacement(const topo::Topology& topology, int gpus);

  /// The tuner's model of the communicator over `ranks` (global rank numbers,
  /// at least one). Built once per distinct shape.
  const tuner::TunerTopology& group(const std::vector<int>& ranks);

  int gpusPerHost() const { return perHost_; }
  int hostsNeeded() const;

 private:
  const topo::Topology& topology_;
  int gpus_ = 0;
  int perHost_ = 0;
  std::vector<int> direct_;  ///< node of each rank when the file holds the whole job
  std::optional<topo::RankGraph> whole_;
  std::map<std::vector<int>, tuner::TunerTopology> cache_;
};

}  // namespace loom::plan
