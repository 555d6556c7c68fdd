#include "monitored_barrier.h"

#include <c10/util/Exception.h>

#include <vector>

namespace loom::torch_backend {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
}

// Whether `key` appears before `deadline` (a look without waiting once it
// has passed, so wait_all_ranks still finds every rank that did arrive).
bool arrives(c10d::Store& store, const std::string& key, Clock::time_point deadline) {
  const std::chrono::milliseconds wait = left(deadline);
  if (wait.count() <= 0) return store.check({key});
  try {
    store.wait({key}, wait);
    return true;
  } catch (const c10::Error&) {
    return store.check({key});
  }
}

}  // namespace

void MonitoredBarrier::pass(std::chrono::milliseconds timeout, bool waitAllRanks) {
  const std::string base = prefix_ + "loom/monitored_barrier/" + std::to_string(passed_++) + "/";
  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string released = base + "released";
  if (rank_ != 0) {
    store_->set(base + "arrived/" + std::to_string(rank_), std::vector<uint8_t>{1});
    if (!arrives(*store_, released, deadline)) {
      C10_THROW_ERROR(DistBackendError, "loom backend: monitored_barrier on rank " +
                                            std::to_string(rank_) +
                                            ": rank 0 did not release it within " +
                                            std::to_string(timeout.count()) + " ms");
    }
    return;
  }
  std::string missing;
  for (int r = 1; r < size_; ++r) {
    if (arrives(*store_, base + "arrived/" + std::to_string(r), deadline)) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (!waitAllRanks) break;
  }
  if (!missing.empty()) {
    C10_THROW_ERROR(DistBackendError,
                    "loom backend: monitored_barrier: rank(s) " + missing +
                        " did not reach it within " + std::to_string(timeout.count()) + " ms" +
                        (waitAllRanks ? "" : " (wait_all_ranks=True lists every missing rank)"));
  }
  store_->set(released, std::vector<uint8_t>{1});
}

}  // namespace loom::torch_backend
