// A WalkProxy (collectives/walker/walk_proxy.h) on its own thread: it moves
// the messages of device walks to and from peers on other hosts while the
// kernels run, stream-async. It shares the communicator's network links with
// the host executor, so the two take turns: every host-side use of the links
// (any call, including the device path's own agreements) first waits until
// the proxy has moved everything it was given (quiesce).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "collectives/walker/walk_proxy.h"

namespace loom {

class WalkProxyRunner {
 public:
  WalkProxyRunner(std::unique_ptr<walk::WalkProxy> proxy, std::chrono::milliseconds timeout);
  ~WalkProxyRunner();
  WalkProxyRunner(const WalkProxyRunner&) = delete;
  WalkProxyRunner& operator=(const WalkProxyRunner&) = delete;

  /// Queues one walk's messages and wakes the thread.
  void add(const walk::ProxyMessages& messages);
  /// Returns once every queued message has moved and the links are drained.
  /// Throws RemoteError with the proxy's failure (a peer gone, a size the plan
  /// did not predict), or when nothing moved for the timeout.
  void quiesce();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::unique_ptr<walk::WalkProxy> proxy_;
  std::chrono::milliseconds timeout_;
  std::string error_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace loom
