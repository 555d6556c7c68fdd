// The compressed ring reduce-scatter as a plan the walker runs with a wire
// codec (walk_program.h, WireCodec): the host's ring (src/comm/
// compressed_ring.cc) hop for hop, so step j of the plan is hop j and encodes
// with the host's counter for it.
#pragma once

#include <cstddef>

#include "collectives/plan.h"

namespace loom::walk {

/// Rank `rank`'s ring over a tensor of `total` elements cut into `nranks`
/// chunks (chunkOffset / chunkSize, as compressed::Layout cuts them): send
/// chunk rank - 1 to the right, then for each hop receive chunk rank - 2 - hop
/// from the left, add this rank's own values (Input at the chunk's offset)
/// and pass the sum on; the last hop's sum, chunk `rank`, is written to
/// Output at 0. One rank: an empty plan.
RankPlan codecRingReduceScatterPlan(int rank, int nranks, size_t total);

}  // namespace loom::walk
