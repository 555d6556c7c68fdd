#include "emulated_cuda/emulated_streams.h"

#include <algorithm>

namespace loom::emulated {

Stream::Stream(bool blocking, int device)
    : blocking_(blocking), device_(device), worker_([this] { work(); }) {}

Stream::~Stream() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void Stream::enqueue(std::function<void()> task) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    ++enqueued_;
  }
  changed_.notify_all();
}

void Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = enqueued_;
  changed_.wait(lock, [&] { return finished_ >= target; });
}

void Stream::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, with nothing left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
    ++finished_;
    changed_.notify_all();
  }
}

void Event::record(Stream& stream) {
  uint64_t number = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    number = ++recorded_;
  }
  stream.enqueue([self = shared_from_this(), number] {
    const std::lock_guard<std::mutex> lock(self->mutex_);
    self->completed_ = std::max(self->completed_, number);
    self->changed_.notify_all();
  });
}

bool Event::done() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return completed_ >= recorded_;
}

void Event::wait() {
  uint64_t target = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    target = recorded_;
  }
  waitFor(target);
}

void Event::enqueueWait(Stream& stream) {
  uint64_t target = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    target = recorded_;
  }
  stream.enqueue([self = shared_from_this(), target] { self->waitFor(target); });
}

void Event::waitFor(uint64_t record) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return completed_ >= record; });
}

}  // namespace loom::emulated
