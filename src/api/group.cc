#include "api/group.h"

#include <exception>
#include <memory>
#include <thread>

namespace loom {
namespace {

struct PendingGroup {
  int depth = 0;
  std::vector<std::pair<Comm*, Operation>> ops;
};

PendingGroup& pending() {
  thread_local PendingGroup group;
  return group;
}

}  // namespace

bool enqueueInGroup(Comm& comm, const Operation& op) {
  PendingGroup& g = pending();
  if (g.depth == 0) return false;
  g.ops.emplace_back(&comm, op);
  return true;
}

void groupStart() { ++pending().depth; }

void groupEnd() {
  PendingGroup& g = pending();
  if (g.depth == 0) raise(ErrorCode::InvalidUsage, "loomGroupEnd without loomGroupStart");
  if (--g.depth > 0) return;
  std::vector<std::pair<Comm*, Operation>> ops;
  ops.swap(g.ops);

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
