#include "p2p_batch.h"

namespace loom::torch_backend {

void P2pBatch::add(std::function<loomResult_t()> enqueue,
                   const c10::intrusive_ptr<LoomWork>& work) {
  std::weak_ptr<P2pBatch> self = weak_from_this();
  work->beforeWait([self] {
    if (auto batch = self.lock()) batch->flush();
  });
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back({std::move(enqueue), work});
}

void P2pBatch::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.empty() || !submit_) return;
  // Handed over under the lock: batches reach the worker in the order they formed.
  submit_(std::move(pending_));
  pending_.clear();
}

void P2pBatch::close() {
  flush();
  std::lock_guard<std::mutex> lock(mutex_);
  submit_ = nullptr;
}

}  // namespace loom::torch_backend
