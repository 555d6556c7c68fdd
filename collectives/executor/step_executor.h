// Runs plans over links on host memory. Each job is one rank's plan for one
// operation; its streams are merged slice-outer (iteration i runs slice i of
// stream 0's steps, then of stream 1's, ...), so the messages on every link
// leave and arrive in one order both sides derive from the plan. Several jobs
// run concurrently (a group's sends and receives), which is what keeps
// exchanges from deadlocking; jobs must not share a link direction. Within a
// job, the steps of each channel (Step::channel) form their own cursor over
// that channel's links, so channels never wait for one another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "collectives/executor/waiter.h"
#include "collectives/plan.h"
#include "math/reducer.h"
#include "transports/link.h"

namespace loom {

struct ReduceContext {
  ReduceFn reduce = nullptr;      // null for data-movement collectives
  FinalizeFn finalize = nullptr;  // null unless the op needs it (avg)
  int nranks = 1;
};

struct PlanBuffers {
  const char* input = nullptr;
  char* output = nullptr;
  char* scratch = nullptr;
};

struct PlanJob {
  const RankPlan* plan = nullptr;
  PlanBuffers buffers;
  ReduceContext reduce;
  size_t elementSize = 1;
  /// The call stamp its messages carry and must arrive with (Link::stampSends);
  /// 0: not checked (sends and receives, whose peers make other calls).
  uint32_t stamp = 0;
};

class StepExecutor {
 public:
  /// `channelLinks[c][p]` is channel c's link to rank p (nullptr for self and
  /// for peers the channel does not reach). `sliceBytes` must be the same on
  /// every rank and at most every link's maxMessageBytes.
  StepExecutor(std::span<const std::vector<Link*>> channelLinks, size_t sliceBytes, Waiter& waiter);

  void run(std::span<const PlanJob> jobs);
  /// Payload bytes committed to links so far by this executor.
  uint64_t bytesSent() const { return bytesSent_; }

 private:
  struct Cursor;
  bool attempt(Cursor& cursor);
  bool tryStep(const PlanJob& job, const Step& step, size_t first, size_t count);
  Link* link(int peer, const Step& step) const;
  void drainSends(FunctionRef<std::string()> describe);
  std::string describeWaits(std::span<const Cursor> cursors) const;

  std::span<const std::vector<Link*>> channels_;
  size_t sliceBytes_;
  Waiter& waiter_;
  uint64_t bytesSent_ = 0;
};

}  // namespace loom
