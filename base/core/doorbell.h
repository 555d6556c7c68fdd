// A rank's doorbell: one futex word in shared memory that peers ring after
// they publish something the rank may be waiting for (data in its inbox, room
// in a FIFO it sends to, a flag in the direct arena). Waiting on one word lets
// a rank sleep while it waits for any of several peers.
//
// Ranks often outnumber cores (tests run 8 ranks on 2 cores), so a wait spins
// only briefly, then sleeps in the kernel. On the hot path nobody writes the
// doorbell: a ringer only touches the counter when the owner has armed it.
// No wake-up is lost: the owner arms (seq_cst) before its last check of the
// condition and a ringer publishes (seq_cst) before it reads the arm flag, so
// either the owner sees the data or the ringer sees the flag and bumps the
// counter, which makes FUTEX_WAIT on the armed value return. Sleeps are also
// capped, so abort flags and deadlines are noticed.
#pragma once

#include <atomic>
#include <cstdint>

namespace loom {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> counter{0};
  std::atomic<uint32_t> armed{0};

  /// Called by a peer after it published; wakes the owner only if it is armed.
  void ring();
  /// Owner: announce an imminent sleep; returns the value to pass to sleep().
  /// Check the condition again after arming and before sleeping.
  uint32_t arm();
  /// Owner: sleep until rung (counter != seen) or `maxMicros` passed; disarms.
  void sleep(uint32_t seen, long maxMicros);
  /// Owner: the condition came true after arm(); no sleep needed.
  void disarm() { armed.store(0, std::memory_order_relaxed); }
};

static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace loom
