// One process group of the rank grid (TP, DP, PP, ...) as the trainer uses it:
// a Loom communicator, the calls the trainer makes on it, and a clock that adds
// up the time spent in them (the "comm %" of the progress line). A group of one
// rank makes no calls at all, so the single-rank model runs the same code.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <loom/loom.hpp>
#include <thread>
#include <vector>

namespace loom::train {

/// Seconds spent inside collectives, summed over a rank's groups. Only calls
/// made by the thread that created the clock (the rank's own thread) count as
/// exposed: the data-parallel overlap worker's calls run while that thread
/// computes, so they are tallied apart.
class CommClock {
 public:
  void add(double seconds) {
    if (std::this_thread::get_id() == owner_) {
      seconds_ += seconds;
    } else {
      background_.fetch_add(seconds, std::memory_order_relaxed);
    }
  }
  double seconds() const { return seconds_; }
  double backgroundSeconds() const { return background_.load(std::memory_order_relaxed); }

 private:
  std::thread::id owner_ = std::this_thread::get_id();
  double seconds_ = 0;
  std::atomic<double> background_{0};
};

/// A point-to-point transfer inside GroupComm::exchange.
struct Transfer {
  float* data;
  size_t count;
  int peer;  ///< rank within the group
};

class GroupComm {
 public:
  GroupComm() = default;  ///< a group of one rank
  GroupComm(loom::Comm comm, CommClock* clock);

  int rank() const { return rank_; }
  int size() const { return size_; }
  loomComm_t raw() const { return comm_.get(); }

  /// In-place sum over the group.
  void allReduceSum(float* data, size_t count);
  /// In-place reduction of doubles (loss, norms, statistics).
  void allReduce(double* data, size_t count, loomRedOp_t op = loomSum);
  /// In-place sum, compressed as `compression` says (nullptr: exact).
  void allReduceSum(float* data, size_t count, const loomCompression* compression);
  /// In place: `data` holds size() blocks of `blockCount`; rank r ends with the
  /// sum of block r at data + r * blockCount (other blocks are left as scratch).
  void reduceScatterSum(float* data, size_t blockCount, const loomCompression* compression);
  /// In place: rank r's block at data + r * blockCount goes to every rank.
  void allGather(float* data, size_t blockCount);
  /// Runs the sends and receives together (one Loom group), so two stages that
  /// send to each other cannot deadlock.
  void exchange(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs);

  /// Payload bytes this rank has sent on this group so far.
  uint64_t bytesSent() const;
  /// Every live rank's calls on this group return loomRevoked (after a failure,
  /// so that peers waiting here for a rank that is gone stop waiting).
  void revoke() {
    if (comm_) comm_.revoke();
  }
  /// Counts time this rank's thread spent waiting for this group's calls made
  /// elsewhere (the overlap worker) as communication time.
  void addWaitTime(double seconds) {
    if (clock_ != nullptr) clock_->add(seconds);
  }

 private:
  class Timed;
  loom::Comm comm_;
  CommClock* clock_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace loom::train
