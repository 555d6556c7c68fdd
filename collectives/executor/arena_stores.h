// Which stores a rank writes its arena with, for the direct rounds that
// peers read in bulk: all-reduce, all-gather and reduce-scatter (its copy of
// the input, an all-reduce's reduced shard), broadcast's root and reduce's
// other ranks (their copies of the message).
//
// Cached stores leave the lines in this core's cache, where a peer on a core
// that shares it reads them at once. But the arena is reused every other
// round, so each store first takes back a line the peer still holds; where
// the peer's core is far (another die, socket or, on a VM, another host core)
// that costs a round trip per line, and the stores wait for it. Streaming
// stores (past the cache) do not wait: the peer then reads memory instead.
// On a 2-core EPYC VM whose two vCPUs sat either close (a 0.1 us cache-line
// round trip) or far (0.4 us), 64 MiB two-rank all-reduces moved, as bus
// bandwidth, 7.2-7.5 GB/s cached and 5.6 streaming when close, 1.9-2.5 GB/s
// cached and 5.0-8.1 streaming when far. Which one a machine gets is only
// known by trying, and on a VM it changes while a job runs, so by default
// (`auto`) the communicator measures both and keeps the faster
// (measured_choice.h).
#pragma once

#include <string_view>

#include "collectives/executor/measured_choice.h"
#include "collectives/plan.h"

namespace loom {

/// LOOM_ARENA_STORES: the first way is cached stores, the second streaming;
/// `choice` names it in the log.
constexpr ChoiceNames arenaStoreNames(std::string_view choice) {
  return namedChoice(choice, "cached", "streaming");
}
inline constexpr ChoiceNames kArenaStoreNames = arenaStoreNames("arena stores");
/// The same choice where each writer makes it alone.
inline constexpr ChoiceNames kBroadcastStoreNames =
    arenaStoreNames("broadcast root's arena stores");
inline constexpr ChoiceNames kReduceStoreNames = arenaStoreNames("reduce's arena stores");

/// The collectives whose direct rounds every rank publishes and waits for
/// together, so that rank 0's decision reaches every rank in step: each has a
/// choice of its own, since a round's cost differs between them.
inline constexpr int kArenaStoreSlots = 3;
/// The collectives the direct algorithm runs, numbered for state a
/// communicator keeps per collective; the first kArenaStoreSlots are the ones
/// above.
inline constexpr int kDirectCollectives = 5;
constexpr int directSlot(Collective collective) {
  switch (collective) {
    case Collective::AllReduce:
      return 0;
    case Collective::AllGather:
      return 1;
    case Collective::ReduceScatter:
      return 2;
    case Collective::Broadcast:
      return 3;
    default:
      return 4;  // Reduce: nothing else runs direct
  }
}
/// The slot of `collective` in rank 0's header, or -1 where each writer
/// chooses alone: broadcast's root and reduce's other ranks write rounds that
/// no rank waits for in step, and only they write (their readers' stores do
/// not matter), so a writer times its own rounds, from before its wait to
/// reuse the round's parity, and follows its own decision.
constexpr int arenaStoreSlot(Collective collective) {
  const int slot = directSlot(collective);
  return slot < kArenaStoreSlots ? slot : -1;
}
/// The MeasuredChoice lag of a direct collective's stores: a writer that
/// chooses alone times from before its wait to reuse the round's parity,
/// which is for the readers of the round before last.
constexpr int arenaStoreLag(int directSlot) { return directSlot < kArenaStoreSlots ? 0 : 1; }

}  // namespace loom
