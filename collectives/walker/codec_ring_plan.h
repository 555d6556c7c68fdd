// The compressed ring reduce-scatter as plans the walker runs: with a wire
// codec (walk_program.h, WireCodec), the host's ring (src/comm/
// compressed_ring.cc) hop for hop in one plan, so step j of the plan is hop j
// and encodes with the host's counter for it; or one hop at a time, with the
// codec's kernels between the walks.
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

/// One hop of a ring, for codecs that cannot ride in the walker's steps
/// (top-k, int8 blocks larger than a FIFO slot): send `count` elements of
/// Input at 0 to the right neighbour while receiving as many from the left
/// into Output at 0; the codec kernels run between hops. One rank: an empty
/// plan.
RankPlan ringHopPlan(int rank, int nranks, size_t count);

}  // namespace loom::walk
