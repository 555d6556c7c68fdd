// A thread block emulated by std::threads, for running the plan walker
// (collectives/walker/plan_walker.h) on the host: the Team policy the CUDA
// kernel implements with __syncthreads and atomics, here with std::barrier and
// std::atomic_ref, so the walker's protocols meet real concurrency (and TSan).
#pragma once

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <thread>
#include <vector>

#include "collectives/walker/walk_types.h"

namespace loom::walk {

/// What the threads of one team share (a block's shared memory and barrier).
/// `lanes` threads in a row form a group, as a warp (laneMax); it divides
/// `threads`.
struct HostTeamShared {
  explicit HostTeamShared(int threads, int lanes = 1)
      : size(threads), lanes(lanes), barrier(threads), laneValues(static_cast<size_t>(threads)) {
    if (lanes < 1 || threads % lanes != 0) throw std::invalid_argument("lanes must divide threads");
    for (int g = 0; g < threads / lanes; ++g) groupBarriers.emplace_back(lanes);
  }
  const int size;
  const int lanes;
  std::barrier<> barrier;
  std::deque<std::barrier<>> groupBarriers;  // one per group of lanes
  std::vector<uint32_t> laneValues;          // laneMax's inputs, one per thread
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
  int laneCount() const { return shared_.lanes; }
  /// Every lane posts its value, all meet, each reads the group's values, and
  /// all meet again before any may post the next round's.
  uint32_t laneMax(uint32_t v) {
    const int first = index_ - index_ % shared_.lanes;
    std::barrier<>& group = shared_.groupBarriers[static_cast<size_t>(index_ / shared_.lanes)];
    shared_.laneValues[static_cast<size_t>(index_)] = v;
    group.arrive_and_wait();
    uint32_t max = 0;
    for (int l = first; l < first + shared_.lanes; ++l) {
      const uint32_t x = shared_.laneValues[static_cast<size_t>(l)];
      max = x > max ? x : max;
    }
    group.arrive_and_wait();
    return max;
  }

 private:
  HostTeamShared& shared_;
  int index_;
  uint64_t round_ = 0;
};

}  // namespace loom::walk
