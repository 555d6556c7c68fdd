// Streams and events of the emulated CUDA runtime (emulated_runtime.cc): a
// stream is a worker thread that runs its tasks in order, so work enqueued by
// the library really runs later, concurrently with the caller and with other
// streams, as on a GPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace loom::emulated {

class Stream {
 public:
  /// `blocking`: a stream made by cudaStreamCreate, which the legacy default
  /// stream's synchronous copies wait for. `device`: the device it was made
  /// on, whose synchronisations (cudaFree, cudaDeviceSynchronize) wait for it.
  Stream(bool blocking, int device);
  ~Stream();  // finishes the queue first
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void enqueue(std::function<void()> task);
  /// Waits until every task enqueued so far has run.
  void synchronize();
  bool blocking() const { return blocking_; }
  int device() const { return device_; }

 private:
  void work();

  const bool blocking_;
  const int device_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  uint64_t enqueued_ = 0;
  uint64_t finished_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

/// cudaEvent_t: records are numbered; a record completes when its stream
/// reaches it. Tasks hold the event by shared_ptr, so destroying it while a
/// record is pending (which CUDA allows) frees it once the last task ran.
class Event : public std::enable_shared_from_this<Event> {
 public:
  /// Enqueues the record on `stream`.
  void record(Stream& stream);
  /// Whether the last record (if any) has completed.
  bool done();
  void wait();
  /// Makes `stream` wait for the last record so far.
  void enqueueWait(Stream& stream);

 private:
  void waitFor(uint64_t record);

  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t recorded_ = 0;
  uint64_t completed_ = 0;
};

}  // namespace loom::emulated
