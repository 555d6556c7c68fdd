// One worker thread that runs a process group's Loom calls in order. Calls
// made with async_op=True go to the worker, so the caller is not blocked;
// blocking calls run on the caller's own thread when nothing is queued or
// running (no thread hand-off on the common path) and join the queue
// otherwise, so calls reach the communicator in the order they were made and
// never two at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace loom::torch_backend {

class WorkQueue {
 public:
  using Task = std::function<void()>;

  WorkQueue() = default;
  /// Runs what is queued, then stops the worker.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  /// Runs `task` on this thread if nothing is queued or running, and returns
  /// true (an exception from `task` propagates); false, running nothing,
  /// otherwise.
  bool tryRunHere(const Task& task);
  /// Queues `task` for the worker (started on first use). A task reports its
  /// own failures: an exception that escapes it is dropped.
  void push(Task task);
  /// Waits until every queued task has run, then stops the worker.
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Task> tasks_;
  bool busy_ = false;  // a task runs, here or on the worker
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace loom::torch_backend
