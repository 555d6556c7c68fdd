#include "work_queue.h"

namespace loom::torch_backend {

WorkQueue::~WorkQueue() { drain(); }

bool WorkQueue::tryRunHere(const Task& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || !tasks_.empty()) return false;
    busy_ = true;
  }
  struct Release {
    WorkQueue& queue;
    ~Release() {
      std::lock_guard<std::mutex> lock(queue.mutex_);
      queue.busy_ = false;
      queue.changed_.notify_all();
    }
  } release{*this};
  task();
  return true;
}

void WorkQueue::push(Task task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  if (!worker_.joinable()) {
    stopping_ = false;
    worker_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
}

void WorkQueue::drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

void WorkQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock,
                  [&] { return (!tasks_.empty() && !busy_) || (stopping_ && tasks_.empty()); });
    if (tasks_.empty()) return;  // stopping, nothing left
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      task();
    } catch (...) {  // tasks complete their Work with the error themselves
    }
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace loom::torch_backend
