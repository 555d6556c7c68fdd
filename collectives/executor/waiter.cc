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

Waiter::Waiter(const WaitPolicy& policy, std::string operation)
    : policy_(policy),
      operation_(std::move(operation)),
      deadline_(Deadline::after(policy.timeout)) {}

uint32_t Waiter::snapshot() const {
  return policy_.doorbell != nullptr ? policy_.doorbell->snapshot() : 0;
}

bool Waiter::progressNetwork() {
  bool moved = false;
  for (Link* link : policy_.networkLinks) moved |= link->progress();
  return moved;
}

void Waiter::idle(uint32_t seen, const std::function<std::string()>& waitingFor) {
  if (policy_.abortFlag != nullptr && policy_.abortFlag->load(std::memory_order_acquire)) {
    raise(ErrorCode::Aborted, "{} aborted (loomCommAbort) while waiting for {}", operation_,
          waitingFor());
  }
  const auto now = std::chrono::steady_clock::now();
  if (!idleStarted_) {
    idleStarted_ = true;
    idleSince_ = now;
  }
  if (now >= deadline_.at()) {
    const std::string what = waitingFor();
    LOOM_WARN("{}: no progress for {} s, waiting for {}", operation_,
              std::chrono::duration_cast<std::chrono::seconds>(policy_.timeout).count(), what);
    raise(ErrorCode::RemoteError, "{} timed out after {} s (LOOM_TIMEOUT) waiting for {}",
          operation_, std::chrono::duration_cast<std::chrono::seconds>(policy_.timeout).count(),
          what);
  }
  const auto idleMicros =
      std::chrono::duration_cast<std::chrono::microseconds>(now - idleSince_).count();
  if (idleMicros < policy_.spinMicros) {
    for (int i = 0; i < 16; ++i) cpuRelax();
    return;
  }
  if (!policy_.networkLinks.empty()) {
    // Sockets and shm peers may both be involved: poll briefly, never long,
    // so shm progress (which only rings the doorbell) is not starved.
    std::vector<pollfd> fds;
    fds.reserve(policy_.networkLinks.size());
    for (Link* link : policy_.networkLinks) {
      if (link->pollFd() < 0) continue;
      fds.push_back({link->pollFd(),
                     static_cast<short>(POLLIN | (link->wantsWrite() ? POLLOUT : 0)), 0});
    }
    poll(fds.data(), fds.size(), idleMicros < 2000 ? 0 : 1);
    if (idleMicros < 2000) sched_yield();
    return;
  }
  // Yielding lets a peer that shares this core run at once (ranks often
  // outnumber cores), yet notices its answer within microseconds otherwise.
  if (idleMicros < policy_.yieldMicros) {
    sched_yield();
    return;
  }
  if (policy_.doorbell != nullptr) {
    policy_.doorbell->sleep(seen, 10000);
  } else {
    sched_yield();
  }
}

}  // namespace loom
