#include "group.h"

#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "profiling_alias.h"
#include "status.h"

namespace loom_nccl::group {
namespace {

// A group belongs to the thread that opened it (NCCL's rule, and Loom's), so
// its pending work is thread-local: state the ABI forces, since ncclGroupStart
// takes no handle to keep it in.
struct Pending {
  int depth = 0;
  std::vector<std::function<void()>> creations;
  std::vector<std::unique_ptr<std::byte[]>> buffers;
};

Pending& pending() {
  thread_local Pending group;
  return group;
}

/// Runs every task, each on its own thread when there are several; returns
/// the first failure (in queue order), after all have finished.
std::exception_ptr runConcurrently(std::vector<std::function<void()>>& tasks) {
  std::vector<std::exception_ptr> errors(tasks.size());
  auto runOne = [&](size_t i) {
    try {
      tasks[i]();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (tasks.size() == 1) {
    runOne(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) threads.emplace_back(runOne, i);
    for (auto& t : threads) t.join();
  }
  for (auto& e : errors) {
    if (e) return e;
  }
  return nullptr;
}

}  // namespace

bool isOpen() { return pending().depth > 0; }

void deferCreation(std::function<void()> create) {
  pending().creations.push_back(std::move(create));
}

void keepUntilGroupEnd(std::unique_ptr<std::byte[]> buffer) {
  if (buffer && isOpen()) pending().buffers.push_back(std::move(buffer));
}

}  // namespace loom_nccl::group

using loom_nccl::check;
using loom_nccl::fail;
using loom_nccl::guarded;

extern "C" {

ncclResult_t ncclGroupStart() {
  return guarded("ncclGroupStart", [] {
    check(loomGroupStart());
    ++loom_nccl::group::pending().depth;
  });
}

ncclResult_t ncclGroupEnd() {
  return guarded("ncclGroupEnd", [] {
    auto& group = loom_nccl::group::pending();
    if (group.depth == 0) fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group.depth > 0) {
      check(loomGroupEnd());
      return;
    }
    // Communicators first: the group's collectives cannot use them (NCCL forbids
    // mixing the two in one group), but Loom's group must close either way.
    auto creations = std::move(group.creations);
    group.creations.clear();
    const auto buffers = std::move(group.buffers);  // freed once Loom has run the group
    group.buffers.clear();
    const std::exception_ptr creationError = loom_nccl::group::runConcurrently(creations);
    const loomResult_t result = loomGroupEnd();
    if (creationError) std::rethrow_exception(creationError);
    check(result);
  });
}

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return guarded("ncclGroupSimulateEnd", [] {
    fail(ncclInvalidUsage,
         "Loom cannot simulate a group through the NCCL API; nothing was done and the group stays "
         "open: end it with ncclGroupEnd");
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclGroupStart)
LOOM_NCCL_PROFILING_ALIAS(ncclGroupEnd)
LOOM_NCCL_PROFILING_ALIAS(ncclGroupSimulateEnd)
