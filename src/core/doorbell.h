// A rank's doorbell: one futex word in shared memory that peers ring after
// they publish something the rank may be waiting for (data in its inbox, room
// in a FIFO it sends to, a flag in the direct arena). Waiting on one word lets
// a rank sleep while it waits for any of several peers.
//
// Ranks often outnumber cores (tests run 8 ranks on 2 cores), so a wait spins
// only briefly, then sleeps in the kernel. Lost wake-ups cannot happen: the
// waiter reads the counter before it re-checks its condition, and a ringer
// bumps the counter after publishing, so FUTEX_WAIT on a stale counter returns
// at once. Sleeps are also capped, so abort flags and deadlines are noticed.
#pragma once

#include <atomic>
#include <cstdint>

namespace loom {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> counter{0};
  std::atomic<uint32_t> sleeping{0};

  /// Called by a peer after it published; wakes the owner only if it sleeps.
  void ring();
  /// Owner: snapshot to pass to sleep() after re-checking the condition.
  uint32_t snapshot() const { return counter.load(std::memory_order_seq_cst); }
  /// Owner: sleep until rung (counter != seen) or `maxMicros` passed.
  void sleep(uint32_t seen, long maxMicros);
};

static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace loom
