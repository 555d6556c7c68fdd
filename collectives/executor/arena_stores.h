// Which stores a rank writes its arena with, for the rounds of the direct
// all-reduce, all-gather and reduce-scatter that peers read in bulk (its copy
// of the input, an all-reduce's reduced shard).
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
// (`auto`) the communicator measures both and keeps the faster.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "collectives/plan.h"
#include "core/names.h"

namespace loom {

enum class ArenaStores : uint8_t { Auto, Cached, Streaming };

/// LOOM_ARENA_STORES's words.
inline constexpr Named<ArenaStores> kArenaStoresNames[] = {{ArenaStores::Auto, "auto"},
                                                           {ArenaStores::Cached, "cached"},
                                                           {ArenaStores::Streaming, "streaming"}};

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
/// The slot of `collective`, or -1 where its arena is written with cached
/// stores always (broadcast and reduce, whose ranks do not all wait for rank 0).
constexpr int arenaStoreSlot(Collective collective) {
  const int slot = directSlot(collective);
  return slot < kArenaStoreSlots ? slot : -1;
}

/// One collective's choice on one communicator, the same on every rank.
/// Rank 0 (the leader) times whole rounds, which include the waits for the
/// peers and so the effect of everybody's stores, and publishes its decision
/// with its input; every rank adopts it from its next round. Each round size
/// class (powers of two) is judged on its own and counts its own rounds. A
/// class starts by alternating the two kinds until each has kWarmRounds
/// measured rounds after its first (which also pays for cold caches and
/// fresh pages), keeping each kind's fastest. From then on every
/// kExplorePeriod-th round of the class uses the kind not preferred, on every
/// rank alike, so both stay measured as the machine changes; the preferred
/// kind's cost is a moving average of its rounds, the other's its latest
/// round, and the other takes over once it is faster by more than
/// kSwitchMargin.
class ArenaStoreChoice {
 public:
  static constexpr uint64_t kExplorePeriod = 64;
  static constexpr int kWarmRounds = 2;
  static constexpr int kSizeClasses = 32;
  static constexpr uint64_t kAllWarming = ~uint64_t{0} << 32;
  static constexpr double kSwitchMargin = 0.85;

  explicit ArenaStoreChoice(ArenaStores setting = ArenaStores::Auto) : setting_(setting) {}

  /// Whether the next round of `bytes` streams, by the adopted decision.
  /// Every rank calls it once per round of the collective, in the same order,
  /// so the rounds it counts per size class (which pick the warm-up
  /// alternation and the exploring rounds) are the same on every rank.
  bool streams(size_t bytes);

  /// Leader: a round of `bytes` written with `streaming` stores took `nanos`.
  void record(size_t bytes, bool streaming, uint64_t nanos);
  /// Leader: the decision to publish. Bit c: class c prefers streaming (the
  /// faster measured kind); bit 32 + c: class c is still warming up.
  uint64_t decision() const { return decision_; }
  /// Every rank: the leader's published decision, for its next rounds.
  void adopt(uint64_t decision) { adopted_ = decision; }

  ArenaStores setting() const { return setting_; }
  /// The measured cost of a size class, nanoseconds per byte (0: unmeasured).
  double nanosPerByte(size_t bytes, bool streaming) const {
    return cost_[sizeClass(bytes)][streaming ? 1 : 0];
  }

  static int sizeClass(size_t bytes);

 private:
  ArenaStores setting_;
  uint64_t adopted_ = 0;
  uint64_t decision_ = kAllWarming;  // kept up to date by record()
  /// Rounds asked for by size class: a class's own count, not the global
  /// round number, so a class whose rounds all fall on one parity still
  /// alternates and explores.
  std::array<uint64_t, kSizeClasses> asked_{};
  /// By size class and [streaming]: cost in ns per byte, and rounds measured.
  std::array<std::array<double, 2>, kSizeClasses> cost_{};
  std::array<std::array<int, 2>, kSizeClasses> rounds_{};
};

}  // namespace loom
