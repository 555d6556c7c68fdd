// Detects this machine: hwloc (packages, NUMA nodes, cores, PCIe tree with
// link speeds), GPUs through the CUDA runtime and NVML loaded with dlopen (PCI
// bus id, NUMA affinity, NVLinks, P2P), NICs through libibverbs loaded with
// dlopen, and network interfaces through getifaddrs. A machine without GPUs,
// drivers or RDMA NICs is detected fine and says so in the report.
#pragma once

#include <string>
#include <vector>

#include "topology/graph.h"

namespace loom::topo {

struct DetectReport {
  std::vector<std::string> notes;  ///< one line per source: "nvml: not found (dlopen ...)"
};

/// LOOM_TOPO_FILE set: loads that file instead (detection is skipped entirely).
/// Otherwise detects this host as one Host node "host0".
Topology detectTopology(DetectReport* report = nullptr);

}  // namespace loom::topo
