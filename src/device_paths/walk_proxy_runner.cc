#include "device_paths/walk_proxy_runner.h"

#include "core/error.h"

namespace loom {

WalkProxyRunner::WalkProxyRunner(std::unique_ptr<walk::WalkProxy> proxy,
                                 std::chrono::milliseconds timeout)
    : proxy_(std::move(proxy)), timeout_(timeout), thread_([this] { loop(); }) {}

WalkProxyRunner::~WalkProxyRunner() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void WalkProxyRunner::add(const walk::ProxyMessages& messages) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    proxy_->add(messages);
  }
  changed_.notify_all();
}

void WalkProxyRunner::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (proxy_->idle() || !error_.empty()) {
      changed_.notify_all();  // a quiesce may be waiting for this
      changed_.wait(lock);
      continue;
    }
    bool moved = false;
    try {
      moved = proxy_->progress();
    } catch (const Error& e) {
      error_ = e.what();
      continue;
    }
    if (!moved) {
      // The kernel has not published the next message yet, or the network is
      // slower than it: let add() and quiesce() in, and the GPU work.
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
    }
  }
}

void WalkProxyRunner::quiesce() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!proxy_->idle() && error_.empty()) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !proxy_->idle() &&
        error_.empty()) {
      raise(ErrorCode::RemoteError,
            "the device collectives' network proxy did not finish within {} ms; waiting on {}",
            timeout_.count(), proxy_->describeWait());
    }
  }
  if (!error_.empty())
    raise(ErrorCode::RemoteError, "device collectives' network proxy: {}", error_);
}

}  // namespace loom
