// Human and machine views of a topology: what loom-topo prints.
#pragma once

#include <iosfwd>

#include "topology/graph.h"

namespace loom::topo {

/// Indented tree: host > cpu (numa, cores) > pci switches > gpus / nics, then
/// NVLink / NVSwitch / network links with bandwidths.
void printSummaryTree(std::ostream& out, const Topology& topology);

/// GPU (and NIC) path matrix like `nvidia-smi topo -m`: class per pair, then
/// a second table of bottleneck bandwidths in GB/s.
void printPathMatrix(std::ostream& out, const Topology& topology);

/// The whole graph and its path matrix as one JSON object (nlohmann-json).
void printTopologyJson(std::ostream& out, const Topology& topology);

}  // namespace loom::topo
