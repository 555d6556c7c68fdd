// The Work a collective returns: complete when it ran on the caller's thread,
// pending while it waits on the process group's worker. Its future holds the
// output tensors once done (DDP's comm hooks chain on it) or the error.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

namespace loom::torch_backend {

class LoomWork : public c10d::Work {
 public:
  LoomWork(std::vector<at::Tensor> result, c10d::OpType type);

  /// Marks the work done (with `error` when the call failed) and completes its future.
  void complete(std::exception_ptr error = nullptr);
  /// Something to run before the work is waited on or looked at: a send or
  /// receive flushes its batch (p2p_batch.h).
  void beforeWait(std::function<void()> hook) { beforeWait_ = std::move(hook); }

  bool isCompleted() override;
  bool isSuccess() const override;
  /// Blocks until done and rethrows the call's error; `timeout` bounds the
  /// wait (Loom's own deadline, the group's timeout, bounds the call).
  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override { return result_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  void runBeforeWait() const {
    if (beforeWait_) beforeWait_();
  }

  std::vector<at::Tensor> result_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::function<void()> beforeWait_;
};

/// A Work that is complete when returned, its future holding `result`.
c10::intrusive_ptr<c10d::Work> done(std::vector<at::Tensor> result, c10d::OpType type);

}  // namespace loom::torch_backend
