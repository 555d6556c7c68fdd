// How an executor waits when nothing can move: spin briefly (a peer on another
// core usually answers within microseconds), then sleep on the rank's
// doorbell, or poll network links' sockets. Every idle period checks the abort
// flag and the deadline, so no wait outlives LOOM_TIMEOUT.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/doorbell.h"
#include "transports/link.h"

namespace loom {

struct WaitPolicy {
  Doorbell* doorbell = nullptr;            // the rank's own doorbell (shm peers ring it)
  const std::atomic<bool>* abortFlag = nullptr;
  std::chrono::milliseconds timeout{300000};
  long spinMicros = 5;     // pure spinning first
  long yieldMicros = 1000;  // then yield the core, then sleep on the doorbell
  std::vector<Link*> networkLinks;  // links needing progress() and poll()
};

class Waiter {
 public:
  /// `operation` names what runs, for error messages ("allreduce #12 of 4096 x float32").
  Waiter(const WaitPolicy& policy, std::string operation);

  /// Take before checking whether anything can move (see Doorbell).
  uint32_t snapshot() const;
  /// Drives network links; true if any moved bytes.
  bool progressNetwork();
  /// Nothing moved since the last call to madeProgress. Spins, yields or
  /// sleeps a little, then returns so the caller can retry. Throws
  /// Error(Aborted) when aborted and Error(RemoteError) when the deadline passes;
  /// `waitingFor()` says which peer(s) and what for.
  void idle(uint32_t seen, const std::function<std::string()>& waitingFor);
  void madeProgress() { idleStarted_ = false; }
  const std::string& operation() const { return operation_; }

 private:
  const WaitPolicy& policy_;
  std::string operation_;
  Deadline deadline_;
  bool idleStarted_ = false;
  std::chrono::steady_clock::time_point idleSince_;
};

}  // namespace loom
