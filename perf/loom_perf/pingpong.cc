#include "pingpong.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>

namespace perf {
namespace {

// Each side writes its own line and reads the other's, so every round trip is
// two line transfers and nothing else.
struct Lines {
  alignas(64) std::atomic<uint64_t> ping{0};
  alignas(64) std::atomic<uint64_t> pong{0};
};

constexpr uint64_t kTrips = 100000;
constexpr int kBatches = 5;
/// Trips stop once this much time has gone (two processes on one core make
/// every trip a context switch); the best batch so far, even a partial one,
/// is the answer.
constexpr std::chrono::seconds kBudget{3};

/// Waits until `line` reaches `value`. A wait that lasts yields the core
/// (the other process may share it), and every few thousand polls asks
/// `otherSideGone` and the clock, giving up when the other process is gone or
/// 10 s have passed: no wait here outlives its peer.
template <typename Gone>
bool waitFor(const std::atomic<uint64_t>& line, uint64_t value, Gone otherSideGone) {
  constexpr uint64_t kSpins = 256;
  std::chrono::steady_clock::time_point deadline{};
  for (uint64_t polls = 1; line.load(std::memory_order_acquire) < value; ++polls) {
    if (polls < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    sched_yield();
    if (polls % kSpins != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (polls == kSpins) deadline = now + std::chrono::seconds(10);
    if (otherSideGone() || now > deadline) return false;
  }
  return true;
}

}  // namespace

int runPingPong() {
  void* shared =
      mmap(nullptr, sizeof(Lines), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("loom_perf: mmap");
    return 1;
  }
  auto* lines = new (shared) Lines;
  const uint64_t total = kTrips * kBatches;
  const pid_t child = fork();
  if (child < 0) {
    std::perror("loom_perf: fork");
    return 1;
  }
  if (child == 0) {
    const pid_t parent = getppid();
    for (uint64_t i = 1; i <= total; ++i) {
      if (!waitFor(lines->ping, i, [&] { return getppid() != parent; })) _exit(1);
      lines->pong.store(i, std::memory_order_release);
    }
    _exit(0);
  }
  int status = 0;
  bool reaped = false;
  const auto childGone = [&] {
    reaped = reaped || waitpid(child, &status, WNOHANG) == child;
    return reaped;
  };
  // Ends the child whatever it is doing (done, waiting for pings that will
  // not come) and reaps it once.
  const auto endChild = [&] {
    if (reaped) return;
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    reaped = true;
  };
  double best = 1e9;
  uint64_t sent = 0;
  int batches = 0;
  const auto began = std::chrono::steady_clock::now();
  bool overBudget = false;
  while (batches < kBatches && !overBudget) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t trips = 0;
    for (; trips < kTrips && !overBudget; ++trips) {
      if (trips % 1024 == 1023) overBudget = std::chrono::steady_clock::now() - began > kBudget;
      lines->ping.store(++sent, std::memory_order_release);
      if (!waitFor(lines->pong, sent, childGone)) {
        std::fprintf(stderr, "loom_perf: the ping-pong child stopped answering\n");
        endChild();
        munmap(shared, sizeof(Lines));
        return 1;
      }
    }
    const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
    best = std::min(best, us.count() / static_cast<double>(trips));
    ++batches;
  }
  endChild();
  munmap(shared, sizeof(Lines));
  std::printf("# cache-line round trip between two processes, best of %d batch(es): %.3f us\n",
              batches, best);
  std::printf("pingpong_us %.3f\n", best);
  return 0;
}

}  // namespace perf
