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

#include "collectives/plan.h"
#include "core/deadline.h"
#include "core/doorbell.h"
#include "core/error.h"
#include "core/function_ref.h"
#include "core/types.h"
#include "transports/link.h"

namespace loom {

struct WaitPolicy {
  Doorbell* doorbell = nullptr;  // the rank's own doorbell (shm peers ring it)
  const std::atomic<bool>* abortFlag = nullptr;
  /// The revoking rank + 1 once the communicator is revoked (comm.h).
  const std::atomic<int32_t>* revokedBy = nullptr;
  std::chrono::milliseconds timeout{300000};
  long spinMicros = 5;              // pure spinning first
  long yieldMicros = 1000;          // then yield the core, then sleep on the doorbell
  std::vector<Link*> networkLinks;  // links needing progress() and poll()
  /// Throws when a peer is known dead (bootstrap liveness); called while idle.
  std::function<void()> checkPeers;
  /// Text describing what peers are doing, appended to timeout errors.
  std::function<std::string()> peerStates;
};

/// What a wait belongs to, kept as plain fields and only formatted into text
/// when an error needs it, so the common path does no string work.
struct OperationLabel {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  bool group = false;     // a wave of a group's sends and receives; count = its jobs
  uint64_t sequence = 0;  // collectives issued on the communicator before this one
  size_t count = 0;
  DataType type = DataType::Float32;

  std::string toString() const;
};

/// A wait that made no progress for LOOM_TIMEOUT. A RemoteError whose message
/// already says what every peer was doing, so it is its own first cause
/// (raiseFirstCause does not look further).
class WaitTimedOut : public Error {
 public:
  explicit WaitTimedOut(const std::string& message) : Error(ErrorCode::RemoteError, message) {}
};

/// How long a wait must have made no progress before a peer's death fails it.
inline constexpr std::chrono::milliseconds kDeadPeerGrace{50};

class Waiter {
 public:
  /// Keeps references to both: they outlive the wait in the caller's frame.
  Waiter(const WaitPolicy& policy, const OperationLabel& label);

  /// Take before checking whether anything can move: once the wait has spun
  /// and yielded long enough to sleep, this arms the doorbell (see Doorbell).
  uint32_t snapshot();
  /// Drives network links; true if any moved bytes.
  bool progressNetwork();
  /// Nothing moved since the last call to madeProgress. Spins, yields or
  /// sleeps a little, then returns so the caller can retry. Throws
  /// Error(Aborted) when aborted and Error(RemoteError) when the deadline passes;
  /// `waitingFor()` says which peer(s) and what for.
  void idle(uint32_t seen, FunctionRef<std::string()> waitingFor);
  void madeProgress() {
    idleStarted_ = false;
    if (armed_) {
      policy_.doorbell->disarm();
      armed_ = false;
    }
    sleepNext_ = false;
  }
  std::string operation() const { return label_.toString(); }
  std::chrono::milliseconds timeout() const { return policy_.timeout; }
  /// Whether a wait may spin before yielding (no, where ranks outnumber cores).
  bool spins() const { return policy_.spinMicros > 0; }

 private:
  const WaitPolicy& policy_;
  /// Not a copy: the label was just written field by field, and a copy reads
  /// it back in wider words, which stalls store forwarding on every call.
  const OperationLabel& label_;
  /// LOOM_TIMEOUT after the first idle(); max() until then.
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  bool idleStarted_ = false;
  bool sleepNext_ = false;  // the next idle() sleeps, so snapshot() arms the doorbell
  bool armed_ = false;
  std::chrono::steady_clock::time_point nextPeerCheck_;
  std::chrono::steady_clock::time_point idleSince_;
};

}  // namespace loom
