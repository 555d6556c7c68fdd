// Sends and receives wait in a batch until something needs them: a wait on
// (or a look at) one of their Works, or any other call of the group. The
// batch then runs as one Loom group on the worker, so `isend(a); irecv(b);
// wait()` on two ranks that both send first does not deadlock, as it would
// if each send ran alone and blocked until its peer received.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "loom/loom.h"
#include "loom_work.h"

namespace loom::torch_backend {

class P2pBatch : public std::enable_shared_from_this<P2pBatch> {
 public:
  /// One send or receive: `enqueue` makes the Loom call inside the group.
  struct Call {
    std::function<loomResult_t()> enqueue;
    c10::intrusive_ptr<LoomWork> work;
  };
  /// Runs a flushed batch (on the worker); the backend sets it, and clears it
  /// at shutdown, after which a flush runs nothing.
  using Submit = std::function<void(std::vector<Call>)>;

  explicit P2pBatch(Submit submit) : submit_(std::move(submit)) {}

  /// Adds a call; its Work flushes the batch when waited on or looked at.
  void add(std::function<loomResult_t()> enqueue, const c10::intrusive_ptr<LoomWork>& work);
  /// Hands what is pending to the worker, as one group.
  void flush();
  /// Flushes, then stops: later flushes (from Works kept past the group) do nothing.
  void close();

 private:
  std::mutex mutex_;
  std::vector<Call> pending_;
  Submit submit_;
};

}  // namespace loom::torch_backend
