// dist.monitored_barrier over the group's c10d Store: rank 0 waits for every
// other rank's arrival key with the barrier's own timeout and names the ranks
// that did not come (the first, or all with wait_all_ranks); the others wait
// for rank 0's release key and name rank 0 if it never comes. The store, not
// the communicator, carries it, so a missing rank is found within the
// barrier's timeout whatever the group's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace loom::torch_backend {

class MonitoredBarrier {
 public:
  /// `prefix` keeps this group's keys apart from other groups on one store.
  MonitoredBarrier(c10::intrusive_ptr<c10d::Store> store, std::string prefix, int rank, int size)
      : store_(std::move(store)), prefix_(std::move(prefix)), rank_(rank), size_(size) {}

  /// One barrier; every rank of the group calls it in the same order. Throws
  /// DistBackendError naming the ranks that did not arrive (rank 0) or rank 0
  /// (the others) when `timeout` passes.
  void pass(std::chrono::milliseconds timeout, bool waitAllRanks);

  /// The same store for a group derived from this one (a shrunk group), with
  /// keys of its own.
  MonitoredBarrier derived(const std::string& name, int rank, int size) const {
    return {store_, prefix_ + name + "/", rank, size};
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  int rank_;
  int size_;
  int64_t passed_ = 0;
};

}  // namespace loom::torch_backend
