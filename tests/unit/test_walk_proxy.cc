// The plan walker across "hosts": ranks on different hosts reach each other
// through their proxies (collectives/walker/walk_proxy.h) over real TCP links,
// ranks on the same host through each other's arenas, in one walk. Every
// collective and algorithm, 2 to 4 ranks in several host layouts, sizes 0, 1,
// odd and many messages, against the element-by-element reference; one set of
// FIFOs and proxies per layout serves every call, as a communicator's would.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "core/error.h"
#include "unit/walk_harness.h"

namespace loom::walk {
namespace {

using namespace testing_cases;  // NOLINT(google-build-using-namespace): test vocabulary

/// Two 128-byte slots: a 1031-element step is a few dozen messages, and every
/// slot is reused many times.
FifoGeometry proxyGeometry() {
  FifoGeometry g;
  g.channels = 1;
  g.slotCount = 2;
  g.bulkSlotBytes = 128;
  g.llSlotLines = 8;
  return g;
}

/// Every collective and algorithm, sizes 0, 1, 7 and 1031, in and out of
/// place, through one set of FIFOs and proxies.
void walkEveryCollective(Fifos& fifos, const std::string& layout) {
  const Collective collectives[] = {
      Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce, Collective::AllGather,
      Collective::Broadcast, Collective::AllToAll,      Collective::Gather, Collective::Scatter};
  const int n = static_cast<int>(fifos.arenas.size());
  for (Collective coll : collectives) {
    for (Algorithm algorithm :
         {Algorithm::Ring, Algorithm::Tree, Algorithm::Pairwise, Algorithm::Star}) {
      if (!algorithmSupports(algorithm, coll)) continue;
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}}) {
        for (bool inPlace : {false, true}) {
          if (inPlace && coll == Collective::AllToAll) continue;
          const Case c{coll,          n,
                       count,         count % 2 ? DataType::Float32 : DataType::Int32,
                       ReduceOp::Sum, static_cast<int>(count % static_cast<size_t>(n)),
                       inPlace};
          SCOPED_TRACE(describe(c) + " " + toString(algorithm) + " on " + layout);
          World w = makeWorld(c);
          Options o;
          o.algorithm = algorithm;
          o.teamSize = 2;
          expectClean(walkAll(c, w, fifos, o));
          for (const std::string& e : fifos.proxyErrors) ASSERT_EQ(e, "");
          expectResults(c, w);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(WalkProxy, EveryCollectiveAcrossHosts) {
  // Under LOOM_TEST_SCOPE=reduced, one layout: races do not depend on it.
  const std::vector<std::vector<int>> layouts =
      reducedTestScope()
          ? std::vector<std::vector<int>>{{0, 1, 1}}
          : std::vector<std::vector<int>>{{0, 1}, {0, 1, 1}, {0, 0, 1, 1}, {0, 1, 2, 1}};
  for (const std::vector<int>& hosts : layouts) {
    Fifos fifos(proxyGeometry(), hosts);
    std::string layout = "hosts ";
    for (int h : hosts) layout += std::to_string(h);
    walkEveryCollective(fifos, layout);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(WalkProxy, PairsTalkDirectlyOnlyWhenBothEndsReachEachOther) {
  const uint64_t all = ~0ull;
  // Two hosts, every device reachable: only pairs across hosts are proxied.
  const std::vector<std::vector<uint8_t>> across =
      proxiedPairs(std::vector<int>{0, 0, 1, 1}, std::vector<uint64_t>(4, all));
  const std::vector<std::vector<uint8_t>> expectedAcross = {
      {0, 0, 1, 1}, {0, 0, 1, 1}, {1, 1, 0, 0}, {1, 1, 0, 0}};
  EXPECT_EQ(across, expectedAcross);
  // One host; rank 1 cannot write to rank 2 (a refused IPC mapping), and rank
  // 3 to no one: both ends of those pairs use their proxies, never just one.
  const std::vector<uint64_t> reaches = {all, all & ~(uint64_t{1} << 2), all, uint64_t{1} << 3};
  const std::vector<std::vector<uint8_t>> oneHost =
      proxiedPairs(std::vector<int>{7, 7, 7, 7}, reaches);
  const std::vector<std::vector<uint8_t>> expectedOneHost = {
      {0, 0, 0, 1}, {0, 0, 1, 1}, {0, 1, 0, 1}, {1, 1, 1, 0}};
  EXPECT_EQ(oneHost, expectedOneHost);
  // A rank never proxies to itself, whatever its mask says.
  EXPECT_EQ(proxiedPairs(std::vector<int>{0}, std::vector<uint64_t>{0}),
            (std::vector<std::vector<uint8_t>>{{0}}));
  EXPECT_TRUE(proxiedPairs(std::vector<int>{}, std::vector<uint64_t>{}).empty());
  EXPECT_THROW(proxiedPairs(std::vector<int>{0, 0}, std::vector<uint64_t>{all}), Error);
  EXPECT_THROW(proxiedPairs(std::vector<int>(65, 0), std::vector<uint64_t>(65, all)), Error);
}

TEST(WalkProxy, EveryCollectiveOnOneHostWhereSomeRanksCannotReachEachOther) {
  // One host; rank 1 cannot write to rank 2 and rank 3 cannot write to rank 0
  // (one way only, as when one process's IPC mapping is refused), so each of
  // those pairs talks through both ends' proxies and the links, and every
  // other pair directly: the fallback of device_walk.cc when peer access or
  // IPC is refused.
  const uint64_t all = ~0ull;
  const std::vector<uint64_t> reaches = {all, all & ~(uint64_t{1} << 2), all, all & ~uint64_t{1}};
  Fifos fifos(proxyGeometry(), {0, 0, 0, 0}, reaches);
  ASSERT_EQ(fifos.proxied[2][1], 1);
  ASSERT_EQ(fifos.proxied[0][3], 1);
  ASSERT_EQ(fifos.proxied[0][1], 0);
  walkEveryCollective(fifos, "one host, pairs 0-3 and 1-2 proxied");
}

TEST(WalkProxy, EveryReductionOpAndType) {
  Fifos fifos(proxyGeometry(), {0, 1, 1});
  for (DataType type : kTypes) {
    for (ReduceOp op :
         {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
      const Case c{Collective::AllReduce, 3, 37, type, op, 0, false};
      SCOPED_TRACE(describe(c));
      World w = makeWorld(c);
      expectClean(walkAll(c, w, fifos, Options{}));
      for (const std::string& e : fifos.proxyErrors) ASSERT_EQ(e, "");
      expectResults(c, w);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(WalkProxy, MessagesAreTheWalkersSlices) {
  // Rank 0 of a 4-rank ring all-reduce of 1031 floats, 32-float slices: it
  // sends to rank 1 and receives from rank 3; both on the other host.
  PlanRequest req;
  req.nranks = 4;
  req.count = 1031;
  const RankPlan plan = makePlan(req);
  WalkCall call;
  call.nranks = 4;
  const std::vector<uint8_t> proxied = {0, 1, 0, 1};
  const ProxyMessages m = proxyMessages(plan, call, proxyGeometry(), proxied);
  size_t toOne = 0;
  size_t fromThree = 0;
  for (uint32_t b : m.toPeer[1]) {
    EXPECT_LE(b, 128u);
    toOne += b;
  }
  for (uint32_t b : m.fromPeer[3]) fromThree += b;
  size_t plannedOut = 0;
  size_t plannedIn = 0;
  for (const auto& stream : plan.streams) {
    for (const Step& s : stream) {
      if (s.kind != StepKind::Recv && s.kind != StepKind::RecvReduce && s.kind != StepKind::Copy) {
        plannedOut += s.count * 4;
      }
      if (s.kind != StepKind::Send && s.kind != StepKind::Copy) plannedIn += s.count * 4;
    }
  }
  EXPECT_EQ(toOne, plannedOut);
  EXPECT_EQ(fromThree, plannedIn);
  EXPECT_TRUE(m.toPeer[2].empty());
  EXPECT_TRUE(m.fromPeer[2].empty());
}

TEST(WalkProxy, RefusesWhatItCannotCarry) {
  PlanRequest req;
  req.nranks = 2;
  req.count = 10;
  const RankPlan plan = makePlan(req);
  WalkCall call;
  call.nranks = 2;
  const std::vector<uint8_t> proxied = {0, 1};
  FifoGeometry two = proxyGeometry();
  two.channels = 2;
  EXPECT_THROW(proxyMessages(plan, call, two, proxied), Error);
  EXPECT_THROW(proxyMessages(plan, call, proxyGeometry(), std::vector<uint8_t>{1}), Error);

  const ArenaLayout layout(proxyGeometry(), 2);
  std::vector<std::vector<uint64_t>> memory(4, std::vector<uint64_t>(layout.bytes() / 8 + 1));
  std::vector<char*> arenas = {reinterpret_cast<char*>(memory[0].data()),
                               reinterpret_cast<char*>(memory[1].data())};
  FifoRoutes routes;
  routes.arenas = arenas;
  routes.proxied = proxied;
  routes.outbox = reinterpret_cast<char*>(memory[2].data());
  routes.inbox = reinterpret_cast<char*>(memory[3].data());
  EXPECT_NO_THROW(buildWalkProgram(plan, call, proxyGeometry(), routes, 0));
  EXPECT_THROW(buildWalkProgram(plan, call, two, routes, 0), Error);
  call.protocol = Protocol::LowLatency;
  EXPECT_THROW(buildWalkProgram(plan, call, proxyGeometry(), routes, 0), Error);
  routes.inbox = nullptr;
  call.protocol = Protocol::Bulk;
  EXPECT_THROW(buildWalkProgram(plan, call, proxyGeometry(), routes, 0), Error);
  EXPECT_THROW(WalkProxy(ArenaLayout(two, 2), {}, routes.outbox, routes.outbox), Error);
}

}  // namespace
}  // namespace loom::walk
