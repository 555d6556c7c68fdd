#include "collectives/executor/waiter.h"

#include <poll.h>
#include <sched.h>

#include "core/error.h"
#include "core/log.h"

namespace loom {
namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

std::string OperationLabel::toString() const {
  if (group) return fmt::format("send/recv group of {} transfers", count);
  return fmt::format("{} #{} ({} x {}, {})", loom::toString(collective), sequence, count,
                     dataTypeName(type), loom::toString(algorithm));
}

Waiter::Waiter(const WaitPolicy& policy, const OperationLabel& label)
    : policy_(policy), label_(label) {}

uint32_t Waiter::snapshot() {
  if (!sleepNext_ || policy_.doorbell == nullptr) return 0;
  armed_ = true;
  return policy_.doorbell->arm();
}

bool Waiter::progressNetwork() {
  bool moved = false;
  for (Link* link : policy_.networkLinks) moved |= link->progress();
  return moved;
}

void Waiter::idle(uint32_t seen, FunctionRef<std::string()> waitingFor) {
  if (policy_.abortFlag != nullptr && policy_.abortFlag->load(std::memory_order_acquire)) {
    raise(ErrorCode::Aborted, "{} aborted (loomCommAbort) while waiting for {}", operation(),
          waitingFor());
  }
  if (policy_.revokedBy != nullptr) {
    if (const int32_t by = policy_.revokedBy->load(std::memory_order_acquire); by != 0) {
      raise(ErrorCode::Revoked, "{} stopped: rank {} revoked the communicator (loomCommRevoke)",
            operation(), by - 1);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (!idleStarted_) {
    idleStarted_ = true;
    idleSince_ = now;
  }
  // The deadline runs from the operation's first wait: most calls never
  // wait long enough to idle, and they do not read the clock at all.
  if (deadline_ == std::chrono::steady_clock::time_point::max()) deadline_ = now + policy_.timeout;
  // A dead peer is reported by the bootstrap within milliseconds; look once a
  // wait has idled for 1 ms and then every 20 ms, which keeps the syscall off
  // the hot path. A death is only fatal once this wait has made no progress for
  // kDeadPeerGrace: a peer that finished its part before dying left its data in
  // shared memory, and a live peer we wait on may still deliver, so the
  // collective the victim completed can complete here too.
  if (policy_.checkPeers && now - idleSince_ > std::chrono::milliseconds(1) &&
      now >= nextPeerCheck_) {
    nextPeerCheck_ = now + std::chrono::milliseconds(20);
    try {
      policy_.checkPeers();
    } catch (const Error&) {
      // The grace lets a dead peer's data still arrive, and this rank find a
      // mismatch itself; once the news revoked the communicator (a revoke, or
      // the mismatch a revoking rank found), the wait ends at once with it.
      const bool revoked =
          policy_.revokedBy != nullptr && policy_.revokedBy->load(std::memory_order_acquire) != 0;
      if (revoked || now - idleSince_ >= kDeadPeerGrace) throw;
      nextPeerCheck_ = idleSince_ + kDeadPeerGrace;
    }
  }
  if (now >= deadline_) {
    std::string what = waitingFor();
    if (policy_.peerStates) what += "; " + policy_.peerStates();
    LOOM_WARN("{}: no progress for {} s, waiting for {}", operation(),
              std::chrono::duration_cast<std::chrono::seconds>(policy_.timeout).count(), what);
    throw WaitTimedOut(fmt::format(
        "{} timed out after {} s (LOOM_TIMEOUT) waiting for {}", operation(),
        std::chrono::duration_cast<std::chrono::seconds>(policy_.timeout).count(), what));
  }
  const auto idleMicros =
      std::chrono::duration_cast<std::chrono::microseconds>(now - idleSince_).count();
  if (idleMicros < policy_.spinMicros) {
    cpuRelax();  // one pause: on recent x86 it lasts ~140 cycles already
    return;
  }
  if (!policy_.networkLinks.empty()) {
    // Sockets and shm peers may both be involved: poll briefly, never long,
    // so shm progress (which only rings the doorbell) is not starved.
    std::vector<pollfd> fds;
    fds.reserve(policy_.networkLinks.size());
    for (Link* link : policy_.networkLinks) {
      if (link->pollFd() < 0) continue;
      fds.push_back(
          {link->pollFd(), static_cast<short>(POLLIN | (link->wantsWrite() ? POLLOUT : 0)), 0});
    }
    poll(fds.data(), fds.size(), idleMicros < 2000 ? 0 : 1);
    if (idleMicros < 2000) sched_yield();
    return;
  }
  // Yielding lets a peer that shares this core run at once (ranks often
  // outnumber cores), yet notices its answer within microseconds otherwise.
  if (idleMicros < policy_.yieldMicros || policy_.doorbell == nullptr) {
    sched_yield();
    return;
  }
  if (!armed_) {
    sleepNext_ = true;  // arm at the next snapshot, re-check, then sleep
    return;
  }
  policy_.doorbell->sleep(seen, 10000);
  armed_ = false;
}

}  // namespace loom
