#include "pingpong.h"

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

/// Waits until `line` reaches `value`. Every few million polls it asks
/// `otherSideGone` (a system call, so not on every poll) and gives up when the
/// other process is gone or 10 s have passed: no wait here outlives its peer.
template <typename Gone>
bool waitFor(const std::atomic<uint64_t>& line, uint64_t value, Gone otherSideGone) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint64_t polls = 1; line.load(std::memory_order_acquire) < value; ++polls) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (polls % (uint64_t{1} << 22) == 0 &&
        (otherSideGone() || std::chrono::steady_clock::now() > deadline)) {
      return false;
    }
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
  const auto childGone = [&] { return waitpid(child, &status, WNOHANG) == child; };
  double best = 1e9;
  uint64_t sent = 0;
  for (int b = 0; b < kBatches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < kTrips; ++i) {
      lines->ping.store(++sent, std::memory_order_release);
      if (!waitFor(lines->pong, sent, childGone)) {
        std::fprintf(stderr, "loom_perf: the ping-pong child stopped answering\n");
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        return 1;
      }
    }
    const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
    best = std::min(best, us.count() / kTrips);
  }
  waitpid(child, &status, 0);
  munmap(shared, sizeof(Lines));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  std::printf("# cache-line round trip between two processes, best of %d x %llu: %.3f us\n",
              kBatches, static_cast<unsigned long long>(kTrips), best);
  std::printf("pingpong_us %.3f\n", best);
  return 0;
}

}  // namespace perf
