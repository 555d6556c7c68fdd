// Paths between endpoints (GPUs, NICs) and their classes, in the vocabulary of
// `nvidia-smi topo -m`:
//   NVL  one NVLink hop, or NVLinks through NVSwitches only
//   PIX  through at most one PCIe switch
//   PXB  through several PCIe switches, not through a CPU
//   PHB  through one PCIe host bridge of a CPU (two trees that name the same
//        bridge in the topology)
//   NODE through a CPU between two of its host bridges (one NUMA node)
//   SYS  across the SMP interconnect between NUMA nodes
//   NET  across the network (different hosts)
// The chosen path between a pair is the one with the highest bottleneck
// bandwidth; ties go to fewer hops. Its class is the worst hop it takes.
#pragma once

#include <vector>

#include "topology/graph.h"

namespace loom::topo {

enum class PathClass : uint8_t { Self, NVL, PIX, PXB, PHB, NODE, SYS, NET, None };

/// "X", "NVL", "PIX", "PXB", "PHB", "NODE", "SYS", "NET", "-"
const char* pathClassName(PathClass cls);

struct Path {
  PathClass cls = PathClass::None;  ///< None: unreachable
  double bandwidth = 0.0;           ///< bottleneck GB/s; 0 when unreachable
  double latency = 0.0;             ///< sum of hop latencies, microseconds
  std::vector<int> links;           ///< link indices from source to destination
};

/// Paths from every node in `endpoints` to every other (row i, column j:
/// endpoints[i] -> endpoints[j]); the diagonal is Self. Typical use:
/// endpoints = nodesOfKind(Gpu), or GPUs followed by NICs.
struct PathMatrix {
  std::vector<int> endpoints;
  std::vector<std::vector<Path>> paths;
  const Path& at(int i, int j) const { return paths[i][j]; }
};

PathMatrix computePaths(const Topology& topology, const std::vector<int>& endpoints);

/// The NIC closest to a GPU (best path class, then bandwidth), or -1 when its
/// host has none. Among equally close NICs the host's GPUs that share them
/// take them in turn, in node order.
int nearestNic(const Topology& topology, int gpu);

}  // namespace loom::topo
