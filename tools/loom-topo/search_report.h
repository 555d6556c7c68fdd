// The part of loom-topo's report that is Loom's own: the rings and trees the
// search builds on a topology, with their bandwidths.
#pragma once

#include <iosfwd>

#include "topology/graph.h"

namespace loomtopo {

/// Prints the rings (one per channel) and the double binary trees for one
/// rank per GPU (one per CPU on a host without GPUs).
void printSearch(std::ostream& out, const loom::topo::Topology& topology);

}  // namespace loomtopo
