// A thread block emulated by std::threads, for running the plan walker
// (collectives/walker/plan_walker.h) on the host: the Team policy the CUDA
// kernel implements with __syncthreads and atomics, here with std::barrier and
// std::atomic_ref, so the walker's protocols meet real concurrency (and TSan).
#pragma once

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <thread>

#include "collectives/walker/walk_types.h"

namespace loom::walk {

/// What the threads of one team share (a block's shared memory and barrier).
struct HostTeamShared {
  explicit HostTeamShared(int threads) : size(threads), barrier(threads) {}
  const int size;
  std::barrier<> barrier;
  // syncOr's votes; three rotate so that a vote is cleared while nobody can
  // still read it or already write it (see HostTeam::syncOr).
  std::atomic<int> votes[3] = {0, 0, 0};
  uint64_t counters[2 * kMaxConnections] = {};
};

class HostTeam {
 public:
  HostTeam(HostTeamShared& shared, int index) : shared_(shared), index_(index) {}

  int index() const { return index_; }
  int size() const { return shared_.size; }
  void sync() { shared_.barrier.arrive_and_wait(); }

  /// Round g votes in votes[g % 3]. Thread 0 clears the next round's word
  /// before arriving: everyone has read it (round g - 2) since they all passed
  /// round g - 1, and nobody writes it (round g + 1) before this barrier opens.
  bool syncOr(bool mine) {
    const int word = static_cast<int>(round_ % 3);
    ++round_;
    if (mine) shared_.votes[word].store(1, std::memory_order_relaxed);
    if (index_ == 0) shared_.votes[round_ % 3].store(0, std::memory_order_relaxed);
    shared_.barrier.arrive_and_wait();
    return shared_.votes[word].load(std::memory_order_relaxed) != 0;
  }

  static uint64_t loadAcquire(const uint64_t* p) {
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
  }
  static uint64_t loadRelaxed(const uint64_t* p) {
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_relaxed);
  }
  static void storeRelease(uint64_t* p, uint64_t v) {
    std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
  }
  static void storeRelaxed(uint64_t* p, uint64_t v) {
    std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_relaxed);
  }
  static bool aborted(const volatile uint32_t* word) {
    return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(word)).load() != 0;
  }
  static bool claim(uint32_t* word, uint32_t value) {
    uint32_t expected = 0;
    return std::atomic_ref<uint32_t>(*word).compare_exchange_strong(expected, value);
  }
  static uint64_t nowNs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  static void relax() { std::this_thread::yield(); }
  uint64_t* counters() { return shared_.counters; }

 private:
  HostTeamShared& shared_;
  int index_;
  uint64_t round_ = 0;
};

}  // namespace loom::walk
