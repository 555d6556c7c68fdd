// How two ranks run a single-copy all-reduce out of place, where each can read
// the other's input in place (threads of one process, registered loomMemAlloc
// buffers): by shards, each rank reducing half and copying the other half from
// its peer's output, or each rank summing the whole message itself.
//
// The shards move less (two bytes read per byte) but half of it is a line the
// peer has just written; the whole sum reads both inputs and streams its
// output (three bytes), none of them written by the peer. Which is faster
// depends on where the two cores sit. On a 2-core EPYC VM, two processes on
// registered buffers, bus bandwidth in GB/s:
//   vCPUs close (0.06-0.09 us cache-line round trip): 256 KiB shards 8.9-10.9,
//   whole 11.0-13.1; 1 MiB shards 16.7-20.3, whole 11.8-13.1; 8 MiB shards
//   5.8-5.9, whole 8.8-9.0;
//   vCPUs far (0.38 us): 512 KiB - 4 MiB shards 3.5-5.9, whole 15.4-20.0.
// So by default (`auto`) the communicator measures both (measured_choice.h).
// Both reduce in rank order, so the results are bit-identical either way.
#pragma once

#include "collectives/executor/measured_choice.h"

namespace loom {

/// LOOM_TWO_RANK_SUM: the first way is shards, the second the whole sum.
inline constexpr ChoiceNames kTwoRankSumNames = namedChoice("two-rank sum", "shards", "whole");

}  // namespace loom
