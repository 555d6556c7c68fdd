#include "api/group.h"

#include <exception>
#include <memory>
#include <thread>

namespace loom {
namespace {

// The depth apart from the queued operations: every call reads it, and a
// trivially built thread_local needs no first-use guard or exit handler.
thread_local int groupDepth = 0;

std::vector<std::pair<Comm*, Operation>>& queued() {
  thread_local std::vector<std::pair<Comm*, Operation>> ops;
  return ops;
}

}  // namespace

bool enqueueInGroup(Comm& comm, const Operation& op) {
  if (groupDepth == 0) return false;
  queued().emplace_back(&comm, op);
  return true;
}

void groupStart() { ++groupDepth; }

void groupEnd() {
  if (groupDepth == 0) raise(ErrorCode::InvalidUsage, "loomGroupEnd without loomGroupStart");
  if (--groupDepth > 0) return;
  std::vector<std::pair<Comm*, Operation>> ops;
  ops.swap(queued());

  // Operations per communicator, in call order.
  std::vector<Comm*> comms;
  std::vector<std::vector<Operation>> batches;
  for (auto& [comm, op] : ops) {
    size_t i = 0;
    while (i < comms.size() && comms[i] != comm) ++i;
    if (i == comms.size()) {
      comms.push_back(comm);
      batches.emplace_back();
    }
    batches[i].push_back(op);
  }
  // Each comm counts the group as a call in flight, so loomCommAbort from
  // another thread waits for it instead of freeing the comm under it.
  std::vector<std::unique_ptr<ActiveCall>> active;
  active.reserve(comms.size());
  for (Comm* comm : comms) active.push_back(std::make_unique<ActiveCall>(*comm));
  if (comms.size() == 1) {
    runOperations(*comms[0], batches[0]);
    return;
  }
  // One thread driving several ranks (loomCommInitAll) must run them together,
  // or the first would wait forever for the others.
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < comms.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        runOperations(*comms[i], batches[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace loom
