// The α–β cost model: predicted time of one collective call for one
// candidate (algorithm, channels, chunk) on a TunerTopology.
//
// Every message of b bytes over a hop with latency α and bandwidth β costs
// α + b/β, and keeps its sender busy for b/β (the sender copies or injects
// it). The executor runs a plan slice by slice, and slice i of every step
// runs before slice i + 1, so:
//
//   ring      A c-channel ring all-reduce of S bytes over n ranks sends
//             2(n-1) steps of S/(c n) per channel, in q slices of σ. Each
//             step waits for the previous rank's step, so the critical path
//             is a walk of K = 2(n-1) q hops backwards round the ring:
//               T = floor(K/n) Σ h + (largest sum of K mod n consecutive h),
//               h_j = α_j + σ/β_j,
//             β_j being each hop's bandwidth with the other channels running.
//             Each link also carries M = K messages in a row: its sender is
//             busy σ/β_j per message and may run only D (linkSlots) messages
//             ahead, so T >= (M-1) max(σ/β_j, h_j/D) + h_j on every hop j;
//             a ring with one slow hop (a network crossing) is bound by it.
//             T is the largest of these bounds. A message smaller than n
//             elements moves only its non-empty chunks, each 2(n-1) hops
//             from its own starting rank.
//             Latency grows linearly with n; bandwidth 2(n-1)/n S/(c β).
//             All-gather and reduce-scatter walk (n-1) q hops of S/c.
//   tree      Two halves of S, one per binary tree (double binary tree over
//             plan positions in treeOrder). Per slice, every rank runs tree 0
//             (reduce up, broadcast down) then tree 1; the model follows each
//             rank's clock through both trees: a rank sends up when its
//             children's partial sums arrived, sends down to its children one
//             after the other. Depth ~log2 n, so latency grows with log n; the
//             bandwidth term is ~2 depth S/(2β) per tree since slices do not
//             overlap (the executor waits for the result of slice i before
//             sending slice i + 1).
//   direct    One host: each rank sends every peer its shard (n-1 sends of
//             S/n), reduces what it receives, then sends its reduced shard to
//             every peer: two phases, each (n-1) σ/β of sending plus α. The
//             k-th send of every rank runs at once, so β is what each pair
//             gets sharing links with the other ranks' k-th sends
//             (TunerTopology::directPair): two GPUs behind one PCIe uplink
//             halve it when both send across it.
//
// Per-iteration models iterate rank clocks for up to kModelIterations slices
// and extrapolate linearly beyond (every later slice repeats the same timing).
#pragma once

#include <cstddef>

#include "collectives/plan.h"
#include "tuner/tuner_topology.h"

namespace loom::tuner {

/// One way to run a call.
struct Candidate {
  Algorithm algorithm = Algorithm::Ring;
  int channels = 1;       ///< ring only: how many rings of ringSets[channels - 1]
  size_t chunkBytes = 0;  ///< executor slice size
};

/// Bytes per plan element the model and the timed simulations assume.
inline constexpr size_t kModelElementBytes = 4;

/// Whether the model (and the tuner) cover this algorithm for this collective
/// on this topology (Direct needs one host).
bool modelled(const TunerTopology& topology, Collective collective, Algorithm algorithm);

/// Predicted microseconds. `bytes` is count * element size as in PlanRequest
/// (per rank for all-gather and reduce-scatter). Throws Error(InvalidArgument)
/// for an algorithm the model does not cover, channels outside
/// 1..maxChannels(), or a chunk below kModelElementBytes.
double predictMicroseconds(const TunerTopology& topology, Collective collective, size_t bytes,
                           const Candidate& candidate);

}  // namespace loom::tuner
