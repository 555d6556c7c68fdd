// Timed plan simulator: closed-form cases it must reproduce exactly.
#include <gtest/gtest.h>

#include "collectives/algorithms.h"
#include "core/error.h"
#include "tools/simulate/timed_simulator.h"

namespace loom {
namespace {

LinkCostFn uniform(double latency, double bandwidth) {
  return [=](int, int, int) { return LinkCost{latency, bandwidth}; };
}

Step stepOf(StepKind kind, int sendPeer, int recvPeer, size_t count) {
  Step s;
  s.kind = kind;
  s.sendPeer = sendPeer;
  s.recvPeer = recvPeer;
  s.count = count;
  return s;
}

std::vector<std::vector<TimedJob>> planned(Collective c, Algorithm a, int n, size_t count) {
  std::vector<std::vector<TimedJob>> jobs(n);
  for (int r = 0; r < n; ++r) {
    PlanRequest req;
    req.collective = c;
    req.algorithm = a;
    req.rank = r;
    req.nranks = n;
    req.count = count;
    jobs[r].push_back({makePlan(req), 0});
  }
  return jobs;
}

TEST(TimedSimulator, OneMessageCostsLatencyPlusTransfer) {
  std::vector<std::vector<TimedJob>> jobs(2);
  jobs[0].push_back({RankPlan{{{stepOf(StepKind::Send, 1, -1, 1000)}}}, 0});
  jobs[1].push_back({RankPlan{{{stepOf(StepKind::Recv, -1, 0, 1000)}}}, 0});
  TimedSimOptions options;
  options.sliceBytes = 1 << 20;
  const TimedResult r = simulateTime(jobs, uniform(2.0, 1.0), options);
  EXPECT_DOUBLE_EQ(r.microseconds, 2.0 + 4000 / 1e3);
  EXPECT_EQ(r.messages, 1u);
}

TEST(TimedSimulator, LinkSerialisesSlicesAndLatencyOverlaps) {
  // 4 slices on one link: the sender is busy 4 transfers, latency paid once.
  std::vector<std::vector<TimedJob>> jobs(2);
  jobs[0].push_back({RankPlan{{{stepOf(StepKind::Send, 1, -1, 4000)}}}, 0});
  jobs[1].push_back({RankPlan{{{stepOf(StepKind::Recv, -1, 0, 4000)}}}, 0});
  TimedSimOptions options;
  options.sliceBytes = 4000;
  options.fifoDepth = 8;
  const TimedResult r = simulateTime(jobs, uniform(10.0, 1.0), options);
  EXPECT_DOUBLE_EQ(r.microseconds, 4 * 4.0 + 10.0);
  // A FIFO of one message makes every slice wait for the previous arrival.
  options.fifoDepth = 1;
  EXPECT_DOUBLE_EQ(simulateTime(jobs, uniform(10.0, 1.0), options).microseconds, 4 * 14.0);
}

TEST(TimedSimulator, RingAllReduceIsTwoNMinusTwoHopsPerSlice) {
  const int n = 6;
  const size_t count = n * 3000;  // chunks of 3000 elements = 12000 bytes
  for (size_t slice : {12000u, 4000u}) {
    TimedSimOptions options;
    options.sliceBytes = slice;
    const double q = 12000.0 / slice;
    const double hop = 1.5 + slice / 2e3;  // 2 GB/s
    const TimedResult r = simulateTime(planned(Collective::AllReduce, Algorithm::Ring, n, count),
                                       uniform(1.5, 2.0), options);
    EXPECT_NEAR(r.microseconds, q * (2 * n - 2) * hop, 1e-9) << "slice " << slice;
    EXPECT_EQ(r.messages, static_cast<size_t>(n * (2 * n - 2) * q));
  }
}

TEST(TimedSimulator, ChannelsHaveTheirOwnLinks) {
  // The same send on channels 0 and 1 runs side by side.
  std::vector<std::vector<TimedJob>> jobs(2);
  for (int ch = 0; ch < 2; ++ch) {
    jobs[0].push_back({RankPlan{{{stepOf(StepKind::Send, 1, -1, 1000)}}}, ch});
    jobs[1].push_back({RankPlan{{{stepOf(StepKind::Recv, -1, 0, 1000)}}}, ch});
  }
  const TimedResult r = simulateTime(jobs, uniform(0.0, 1.0), TimedSimOptions{});
  EXPECT_DOUBLE_EQ(r.microseconds, 4.0);
}

TEST(TimedSimulator, DeadlockAndBadLinksAreErrors) {
  std::vector<std::vector<TimedJob>> jobs(2);
  jobs[0].push_back({RankPlan{{{stepOf(StepKind::Recv, -1, 1, 10)}}}, 0});
  jobs[1].push_back({RankPlan{{{stepOf(StepKind::Recv, -1, 0, 10)}}}, 0});
  EXPECT_THROW(simulateTime(jobs, uniform(1, 1), TimedSimOptions{}), Error);
  auto ring = planned(Collective::AllReduce, Algorithm::Ring, 3, 30);
  EXPECT_THROW(simulateTime(ring, uniform(1, 0), TimedSimOptions{}), Error);
  TimedSimOptions bad;
  bad.fifoDepth = 0;
  EXPECT_THROW(simulateTime(ring, uniform(1, 1), bad), Error);
}

TEST(TimedSimulator, ThousandRanksRunQuickly) {
  TimedSimOptions options;
  const TimedResult r = simulateTime(planned(Collective::AllReduce, Algorithm::Tree, 1024, 1 << 16),
                                     uniform(1.0, 10.0), options);
  EXPECT_GT(r.microseconds, 0);
  EXPECT_EQ(r.messages, 2u * 2 * 1023);  // two trees, up and down, one slice each
}

}  // namespace
}  // namespace loom
