// The plan walker (collectives/walker/) on host threads: every rank's plan,
// split into channels, walked by teams of std::threads through FIFOs in host
// memory with both protocols, against the element-by-element reference
// (unit/collective_cases.h). Tiny slots force many messages, slot reuse and a
// ring's pipelining; the counters persist across calls as on a GPU; a silent
// peer and an abort end the walk with a status naming the peer, never a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/walker/plan_walker.h"
#include "collectives/walker/walk_program.h"
#include "core/error.h"
#include "device/element_types.cuh"
#include "unit/collective_cases.h"
#include "unit/host_team.h"
#include "unit/walk_harness.h"

namespace loom::walk {
namespace {

using namespace testing_cases;  // NOLINT(google-build-using-namespace): test vocabulary

void runCase(const Case& c, const Options& o, uint32_t channels) {
  SCOPED_TRACE(describe(c) + " algorithm " + toString(o.algorithm) + " protocol " +
               std::to_string(static_cast<int>(o.protocol)) + " channels " +
               std::to_string(channels) + " team " + std::to_string(o.teamSize));
  World w = makeWorld(c);
  Fifos fifos(tinyGeometry(channels), c.nranks);
  expectClean(walkAll(c, w, fifos, o));
  expectResults(c, w);
}

std::vector<Algorithm> algorithmsFor(Collective c) {
  std::vector<Algorithm> out;
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Pairwise, Algorithm::Star}) {
    if (algorithmSupports(a, c)) out.push_back(a);
  }
  return out;
}

TEST(PlanWalker, EveryCollectiveAndAlgorithmOnBothProtocols) {
  const std::vector<int> worlds =
      reducedTestScope() ? std::vector<int>{3} : std::vector<int>{1, 2, 3, 5};
  const std::vector<size_t> counts =
      reducedTestScope() ? std::vector<size_t>{1, 1031} : std::vector<size_t>{0, 1, 7, 1031};
  const Collective collectives[] = {
      Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce, Collective::AllGather,
      Collective::Broadcast, Collective::AllToAll,      Collective::Gather, Collective::Scatter};
  for (Collective coll : collectives) {
    for (Algorithm algorithm : algorithmsFor(coll)) {
      for (int n : worlds) {
        for (size_t count : counts) {
          for (Protocol protocol : {Protocol::Bulk, Protocol::LowLatency}) {
            for (bool inPlace : {false, true}) {
              if (inPlace && coll == Collective::AllToAll) continue;
              const int root = static_cast<int>(count % static_cast<size_t>(n));
              const Case c{coll, n, count, DataType::Float32, ReduceOp::Sum, root, inPlace};
              Options o;
              o.algorithm = algorithm;
              o.protocol = protocol;
              o.teamSize = 1 + static_cast<int>(count % 3);
              runCase(c, o, 1 + static_cast<uint32_t>(n % 3));
              if (::testing::Test::HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(PlanWalker, EveryTypeAndOp) {
  // Reduced scope: one type per element size.
  const std::vector<DataType> types =
      reducedTestScope() ? std::vector<DataType>{DataType::Int8, DataType::Float16,
                                                 DataType::Float32, DataType::Float64}
                         : std::vector<DataType>(std::begin(kTypes), std::end(kTypes));
  for (DataType type : types) {
    for (ReduceOp op :
         {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
      for (Collective coll :
           {Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce}) {
        for (Protocol protocol : {Protocol::Bulk, Protocol::LowLatency}) {
          const Case c{coll, 3, 37, type, op, 1, false};
          Options o;
          o.protocol = protocol;
          o.teamSize = 3;
          runCase(c, o, 2);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
    // Data movement in every type: the low-latency units pack 8 / size elements.
    for (Protocol protocol : {Protocol::Bulk, Protocol::LowLatency}) {
      const Case c{Collective::AllGather, 4, 13, type, ReduceOp::Sum, 0, true};
      Options o;
      o.protocol = protocol;
      runCase(c, o, 1);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(PlanWalker, EightRanksLargeCount) {
  for (Protocol protocol : {Protocol::Bulk, Protocol::LowLatency}) {
    const Case c{Collective::AllReduce, 8, 20'011, DataType::Float32, ReduceOp::Sum, 0, true};
    Options o;
    o.protocol = protocol;
    o.teamSize = 2;
    World w = makeWorld(c);
    FifoGeometry g;  // realistic sizes for the large call
    g.channels = 2;
    g.slotCount = 4;
    g.bulkSlotBytes = 4096;
    g.llSlotLines = 256;
    Fifos fifos(g, c.nranks);
    expectClean(walkAll(c, w, fifos, o));
    expectResults(c, w);
  }
}

TEST(PlanWalker, CountersPersistAcrossCallsAndProtocols) {
  // One set of FIFOs, as a communicator keeps them: later calls must find
  // their messages by number, with slots and lines holding older messages.
  const Case calls[] = {
      {Collective::AllReduce, 4, 1031, DataType::Float32, ReduceOp::Sum, 0, false},
      {Collective::AllGather, 4, 9, DataType::Int8, ReduceOp::Sum, 0, false},
      {Collective::AllReduce, 4, 100, DataType::Float64, ReduceOp::Max, 0, true},
      {Collective::Broadcast, 4, 77, DataType::Bfloat16, ReduceOp::Sum, 2, false},
      {Collective::AllReduce, 4, 1031, DataType::Float32, ReduceOp::Sum, 0, false},
  };
  Fifos fifos(tinyGeometry(2), 4);
  int i = 0;
  for (const Case& c : calls) {
    for (Protocol protocol : {Protocol::LowLatency, Protocol::Bulk}) {
      SCOPED_TRACE("call " + std::to_string(i++) + " " + describe(c));
      World w = makeWorld(c);
      Options o;
      o.protocol = protocol;
      expectClean(walkAll(c, w, fifos, o));
      expectResults(c, w);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(PlanWalker, ASilentPeerIsATimeoutNamingIt) {
  for (Protocol protocol : {Protocol::Bulk, Protocol::LowLatency}) {
    const Case c{Collective::AllReduce, 3, 1031, DataType::Float32, ReduceOp::Sum, 0, false};
    World w = makeWorld(c);
    Fifos fifos(tinyGeometry(1), c.nranks);
    Options o;
    o.protocol = protocol;
    o.timeoutNs = 200'000'000;  // 0.2 s
    o.silentRanks = {2};
    const auto start = std::chrono::steady_clock::now();
    const auto statuses = walkAll(c, w, fifos, o);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 10.0);
    // Rank 0 receives from rank 2 on the ring (2 -> 0); rank 1 waits for
    // room or data on 1 -> 2 / 0 -> 1. Both end with a timeout.
    ASSERT_EQ(statuses[0][0].error, static_cast<uint32_t>(WalkError::Timeout));
    EXPECT_EQ(statuses[0][0].peer, 2);
    EXPECT_EQ(statuses[0][0].waitingFor, 1u);  // data
    EXPECT_EQ(statuses[1][0].error, static_cast<uint32_t>(WalkError::Timeout));
    EXPECT_NE(statuses[1][0].peer, 1);
  }
}

TEST(PlanWalker, AnAbortEndsEveryWait) {
  const Case c{Collective::AllReduce, 2, 1031, DataType::Float32, ReduceOp::Sum, 0, false};
  World w = makeWorld(c);
  Fifos fifos(tinyGeometry(1), c.nranks);
  uint32_t abortWord = 0;
  Options o;
  o.silentRanks = {1};
  o.abort = &abortWord;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic_ref<uint32_t>(abortWord).store(1);
  });
  const auto statuses = walkAll(c, w, fifos, o);
  aborter.join();
  EXPECT_EQ(statuses[0][0].error, static_cast<uint32_t>(WalkError::Aborted));
  EXPECT_EQ(statuses[0][0].peer, 1);
}

/// A group of one element type mixing collectives, ops, protocols and edge
/// sizes, as the kernel path fuses it.
std::vector<GroupCall> mixedGroup(int n, DataType type) {
  return {
      {{Collective::AllReduce, n, 1031, type, ReduceOp::Sum, 0, false}, Protocol::Bulk},
      {{Collective::AllReduce, n, 7, type, ReduceOp::Max, 0, true}, Protocol::LowLatency},
      {{Collective::ReduceScatter, n, 13, type, ReduceOp::Avg, 0, false}, Protocol::LowLatency},
      {{Collective::AllGather, n, 0, type, ReduceOp::Sum, 0, false}, Protocol::LowLatency},
      {{Collective::Broadcast, n, 1, type, ReduceOp::Sum, n - 1, false}, Protocol::Bulk},
      {{Collective::AllToAll, n, 5, type, ReduceOp::Sum, 0, false}, Protocol::Bulk},
      {{Collective::Reduce, n, 37, type, ReduceOp::Prod, n / 2, false}, Protocol::LowLatency},
      {{Collective::AllReduce, n, 1, type, ReduceOp::Min, 0, true}, Protocol::Bulk},
  };
}

void expectGroupResults(std::span<const GroupCall> calls, std::span<const World> worlds) {
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i) + " " + describe(calls[i].c));
    expectResults(calls[i].c, worlds[i]);
  }
}

// A group's calls walked in one launch (call by call on every channel) give
// each call's result, and meet peers that launch the same group call by call
// or in other pieces: the messages on every connection come in one order.
TEST(PlanWalker, AFusedGroupMeetsPeersThatCutItDifferently) {
  const std::vector<DataType> types =
      reducedTestScope() ? std::vector<DataType>{DataType::Float32}
                         : std::vector<DataType>{DataType::Float32, DataType::Int8,
                                                 DataType::Bfloat16, DataType::Float64};
  for (DataType type : types) {
    for (uint32_t channels : {1u, 2u}) {
      SCOPED_TRACE(std::string(dataTypeName(type)) + " channels " + std::to_string(channels));
      const std::vector<GroupCall> calls = mixedGroup(3, type);
      std::vector<World> worlds;
      worlds.reserve(calls.size());
      worlds.reserve(calls.size());
      for (const GroupCall& g : calls) worlds.push_back(makeWorld(g.c));
      Fifos fifos(tinyGeometry(channels), 3);
      // Rank 0 fuses everything, rank 1 launches call by call, rank 2 in two pieces.
      const std::vector<std::vector<size_t>> cuts = {
          {calls.size()}, std::vector<size_t>(calls.size(), 1), {3, calls.size() - 3}};
      Options o;
      o.teamSize = 2;
      expectClean(walkGroup(calls, worlds, fifos, o, cuts));
      expectGroupResults(calls, worlds);
      // The counters carry on: the same FIFOs walk the group again, fused everywhere.
      std::vector<World> again;
      again.reserve(calls.size());
      for (const GroupCall& g : calls) again.push_back(makeWorld(g.c));
      expectClean(walkGroup(calls, again, fifos, o, {}));
      expectGroupResults(calls, again);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// A fused walk where a peer never comes stops with a timeout naming it, on
// whichever call the channel had reached.
TEST(PlanWalker, AFusedWalkTimesOutOnASilentPeer) {
  const std::vector<GroupCall> calls = mixedGroup(2, DataType::Float32);
  std::vector<World> worlds;
  worlds.reserve(calls.size());
  for (const GroupCall& g : calls) worlds.push_back(makeWorld(g.c));
  Fifos fifos(tinyGeometry(2), 2);
  Options o;
  o.timeoutNs = 200'000'000;
  o.silentRanks = {1};
  const auto statuses = walkGroup(calls, worlds, fifos, o, {});
  ASSERT_EQ(statuses[0].size(), 2u);
  for (const WalkStatus& s : statuses[0]) {
    EXPECT_EQ(s.error, static_cast<uint32_t>(WalkError::Timeout));
    EXPECT_EQ(s.peer, 1);
  }
}

/// Rank `me`'s send/recv walk with `peer`: one step per call, sends first.
RankPlan pointToPointPlan(int peer, std::span<const size_t> sends, std::span<const size_t> recvs) {
  RankPlan plan;
  plan.streams.emplace_back();
  size_t offset = 0;
  for (size_t bytes : sends) {
    Step s;
    s.kind = StepKind::Send;
    s.sendPeer = peer;
    s.src = {BufferId::Input, offset};
    s.count = bytes;
    plan.streams.back().push_back(s);
    offset += bytes;
  }
  offset = 0;
  for (size_t bytes : recvs) {
    Step s;
    s.kind = StepKind::Recv;
    s.recvPeer = peer;
    s.dst = {BufferId::Output, offset};
    s.count = bytes;
    plan.streams.back().push_back(s);
    offset += bytes;
  }
  return plan;
}

// Send/recv walks let each call's size pick its protocol (both ends know the
// size): one walk mixes low-latency and bulk messages on one connection, in
// both directions at once, and every byte arrives.
TEST(PlanWalker, SendRecvStepsTakeTheProtocolTheirSizePicks) {
  FifoGeometry g = tinyGeometry(2);
  g.llMaxCallBytes = 40;
  // The kernel path walks fewer calls per peer and direction than slots
  // (device_walk_p2p.cc): with sends first, no wait closes a circle.
  g.slotCount = 6;
  // Rank 0's sends are rank 1's receives, and the other way round.
  const std::vector<size_t> zeroToOne = {1, 40, 41, 1000, 7};
  const std::vector<size_t> oneToZero = {333, 2, 64};
  const RankPlan plans[2] = {pointToPointPlan(1, zeroToOne, oneToZero),
                             pointToPointPlan(0, oneToZero, zeroToOne)};
  auto total = [](const std::vector<size_t>& v) {
    size_t t = 0;
    for (size_t b : v) t += b;
    return t;
  };
  std::vector<char> input[2] = {std::vector<char>(total(zeroToOne)),
                                std::vector<char>(total(oneToZero))};
  std::vector<char> output[2] = {std::vector<char>(total(oneToZero), 0),
                                 std::vector<char>(total(zeroToOne), 0)};
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < input[r].size(); ++i)
      input[r][i] = static_cast<char>(i * 7 + static_cast<size_t>(r) * 3 + 1);
  }
  Fifos fifos(g, 2);
  std::vector<WalkProgram> programs;
  for (int r = 0; r < 2; ++r) {
    WalkPart part;
    part.plan = &plans[r];
    part.protocolPerStep = true;
    part.input = input[r].data();
    part.output = output[r].data();
    WalkLaunch launch;
    launch.rank = r;
    launch.nranks = 2;
    launch.type = DataType::Uint8;
    launch.timeoutNs = 20'000'000'000ull;
    programs.push_back(placedProgram({&part, 1}, launch, fifos, r));
  }
  // Calls of up to 40 bytes walk low latency, the rest bulk, on every channel.
  const WalkArgs& args = programs[0].args();
  for (uint32_t c = 0; c < args.channelCount; ++c) {
    const WalkChannel& ch = args.channels[c];
    for (uint32_t j = 0; j < ch.stepCount; ++j) {
      const WalkStep& s = ch.steps[j];
      if (s.kind != static_cast<uint8_t>(StepKind::Send)) continue;
      size_t call = 0;
      for (size_t at = 0; call + 1 < zeroToOne.size(); ++call) {
        if (s.srcOffset < at + zeroToOne[call]) break;
        at += zeroToOne[call];
      }
      EXPECT_EQ(s.protocol,
                static_cast<uint8_t>(zeroToOne[call] <= 40 ? Protocol::LowLatency : Protocol::Bulk))
          << "channel " << c << " step " << j;
    }
  }
  std::thread peer([&] { runProgram(programs[1], DataType::Uint8, 2); });
  runProgram(programs[0], DataType::Uint8, 2);
  peer.join();
  expectClean({{programs[0].args().status, programs[0].args().status + 2},
               {programs[1].args().status, programs[1].args().status + 2}});
  EXPECT_EQ(output[1], input[0]);
  EXPECT_EQ(output[0], input[1]);
}

TEST(PlanWalkerProgram, ChannelsCoverEveryStepOnce) {
  PlanRequest req;
  req.collective = Collective::AllReduce;
  req.nranks = 5;
  req.count = 1031;
  for (int r = 0; r < req.nranks; ++r) {
    req.rank = r;
    const RankPlan plan = makePlan(req);
    for (uint32_t channels : {1u, 2u, 3u, 7u}) {
      std::vector<std::vector<Step>> parts;
      for (uint32_t c = 0; c < channels; ++c) parts.push_back(channelSteps(plan, c, channels, 4));
      size_t index = 0;
      for (const auto& stream : plan.streams) {
        for (const Step& s : stream) {
          size_t covered = 0;
          for (const auto& part : parts) {
            for (const Step& p : part) {
              if (p.kind == s.kind && p.src.buffer == s.src.buffer &&
                  p.src.offset == s.src.offset + covered && p.sendPeer == s.sendPeer &&
                  p.recvPeer == s.recvPeer && p.dst.offset == s.dst.offset + covered) {
                if (covered + p.count < s.count) {
                  EXPECT_EQ(p.count % 4, 0u);
                }
                covered += p.count;
                break;
              }
            }
          }
          EXPECT_EQ(covered, s.count) << "step " << index << " of rank " << r;
          ++index;
        }
      }
    }
  }
}

TEST(PlanWalkerProgram, RefusesWhatTheWalkerCannotRun) {
  FifoGeometry bad;
  bad.bulkSlotBytes = 20;
  EXPECT_THROW(ArenaLayout(bad, 2), Error);
  bad = FifoGeometry{};
  bad.llSlotLines = 3;
  EXPECT_THROW(bad.validate(), Error);

  // An all-to-all over more peers than a channel keeps connections for.
  const int n = static_cast<int>(kMaxConnections) + 2;
  PlanRequest req;
  req.collective = Collective::AllToAll;
  req.algorithm = Algorithm::Pairwise;
  req.nranks = n;
  req.count = 1;
  const RankPlan plan = makePlan(req);
  FifoGeometry g = tinyGeometry(1);
  std::vector<std::vector<uint64_t>> memory(static_cast<size_t>(n),
                                            std::vector<uint64_t>(ArenaLayout(g, n).bytes() / 8));
  std::vector<char*> arenas;
  arenas.reserve(memory.size());
  for (auto& m : memory) arenas.push_back(reinterpret_cast<char*>(m.data()));
  WalkCall call;
  call.nranks = n;
  EXPECT_THROW(buildWalkProgram(plan, call, g, arenas, 0), Error);
  call.nranks = 2;  // arenas for n ranks
  EXPECT_THROW(buildWalkProgram(plan, call, g, arenas, 0), Error);
}

TEST(PlanWalkerProgram, ProtocolFollowsTheCallSize) {
  FifoGeometry g;
  EXPECT_EQ(chooseProtocol(g, 0), Protocol::LowLatency);
  EXPECT_EQ(chooseProtocol(g, g.llMaxCallBytes), Protocol::LowLatency);
  EXPECT_EQ(chooseProtocol(g, g.llMaxCallBytes + 1), Protocol::Bulk);
  EXPECT_EQ(sliceElementsFor(g, Protocol::Bulk, 4), g.bulkSlotBytes / 4);
  EXPECT_EQ(sliceElementsFor(g, Protocol::LowLatency, 2), g.llSlotLines * 4 / 2);
  // Low latency switched off (walks through a proxy): bulk even for empty calls.
  g.llMaxCallBytes = 0;
  EXPECT_EQ(chooseProtocol(g, 0), Protocol::Bulk);
  EXPECT_EQ(chooseProtocol(g, 1), Protocol::Bulk);
}

// The kernel path sizes its program slots once (device_walk.cc createState)
// with programBytesBound for 2n + 2 steps per channel: every collective it
// walks (the usual algorithm) must fit, for every rank, size and channel count.
TEST(PlanWalkerProgram, EveryKernelPathProgramFitsTheBound) {
  const Collective collectives[] = {
      Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce, Collective::AllGather,
      Collective::Broadcast, Collective::AllToAll,      Collective::Gather, Collective::Scatter};
  for (int n : {1, 2, 3, 5, 8, 13}) {
    std::vector<std::vector<uint64_t>> memory;
    std::vector<char*> arenas;
    for (uint32_t channels : {1u, 2u, 7u}) {
      const FifoGeometry g = tinyGeometry(channels);
      memory.assign(static_cast<size_t>(n),
                    std::vector<uint64_t>(ArenaLayout(g, n).bytes() / 8 + 1));
      arenas.clear();
      for (auto& m : memory) arenas.push_back(reinterpret_cast<char*>(m.data()));
      const size_t steps = 2 * static_cast<size_t>(n) + 2;
      const size_t bound = programBytesBound(channels, static_cast<size_t>(n), steps);
      for (Collective coll : collectives) {
        // The kernel path's algorithms (walkAlgorithm): the usual one, and
        // the tree for all-reduce and broadcast.
        std::vector<Algorithm> algorithms = {usualAlgorithm(coll)};
        if (coll == Collective::AllReduce || coll == Collective::Broadcast) {
          algorithms.push_back(Algorithm::Tree);
        }
        for (Algorithm algorithm : algorithms) {
          for (int rank = 0; rank < n; ++rank) {
            for (size_t count : {size_t{1}, size_t{4099}}) {
              PlanRequest req;
              req.collective = coll;
              req.algorithm = algorithm;
              req.rank = rank;
              req.nranks = n;
              req.root = n - 1;
              req.count = count;
              const RankPlan plan = makePlan(req);
              WalkCall call;
              call.rank = rank;
              call.nranks = n;
              const WalkProgram program = buildWalkProgram(plan, call, g, arenas, 0);
              EXPECT_LE(program.bytes(), bound)
                  << toString(coll) << " " << toString(algorithm) << " n=" << n << " rank " << rank
                  << " channels " << channels;
            }
          }
        }
      }
    }
  }
}

// A fused walk of k calls fits programBytesBound(channels, n, k (2n + 2), k),
// which the kernel path sizes its slots with.
TEST(PlanWalkerProgram, AFusedProgramFitsTheBoundForItsCalls) {
  for (int n : {2, 5, 8}) {
    const FifoGeometry g = tinyGeometry(2);
    std::vector<std::vector<uint64_t>> memory(
        static_cast<size_t>(n), std::vector<uint64_t>(ArenaLayout(g, n).bytes() / 8 + 1));
    std::vector<char*> arenas;
    arenas.reserve(memory.size());
    for (auto& m : memory) arenas.push_back(reinterpret_cast<char*>(m.data()));
    FifoRoutes routes;
    routes.arenas = arenas;
    std::vector<RankPlan> plans;
    const Collective cycle[] = {Collective::AllReduce, Collective::AllToAll,
                                Collective::ReduceScatter, Collective::Broadcast};
    for (size_t k = 0; k < 16; ++k) {
      PlanRequest req;
      req.collective = cycle[k % 4];
      req.algorithm = usualAlgorithm(req.collective);
      req.rank = n - 1;
      req.nranks = n;
      req.count = 1000 + k;
      plans.push_back(makePlan(req));
    }
    std::vector<WalkPart> parts;
    for (const RankPlan& plan : plans) {
      WalkPart part;
      part.plan = &plan;
      parts.push_back(part);
      WalkLaunch launch;
      launch.rank = n - 1;
      launch.nranks = n;
      const WalkProgram program = buildWalkProgram(parts, launch, g, routes, 0);
      const size_t k = parts.size();
      EXPECT_LE(program.bytes(), programBytesBound(2, static_cast<size_t>(n), k * (2 * n + 2), k))
          << "n=" << n << " calls " << k;
      EXPECT_EQ(program.args().callCount, k);
    }
  }
  // No call, or a call without a plan, is refused.
  const FifoGeometry g = tinyGeometry(1);
  std::vector<uint64_t> memory(ArenaLayout(g, 1).bytes() / 8 + 1);
  char* arena = reinterpret_cast<char*>(memory.data());
  FifoRoutes routes;
  routes.arenas = {&arena, 1};
  WalkLaunch launch;
  EXPECT_THROW(buildWalkProgram({}, launch, g, routes, 0), Error);
  const WalkPart noPlan;
  EXPECT_THROW(buildWalkProgram({&noPlan, 1}, launch, g, routes, 0), Error);
}

TEST(PlanWalkerProgram, LowLatencyFlagsNeverRepeatBetweenNeighbours) {
  EXPECT_NE(llFlag(0), 0u);
  for (uint64_t m : {uint64_t{1}, uint64_t{0xFFFFFFFE}, uint64_t{0xFFFFFFFF}, uint64_t{0x1FFFFFFFE},
                     uint64_t{1} << 40}) {
    EXPECT_NE(llFlag(m), 0u);
    for (uint64_t slots : {uint64_t{1}, uint64_t{2}, uint64_t{8}}) {
      EXPECT_NE(llFlag(m), llFlag(m + slots)) << m << " " << slots;
    }
  }
}

}  // namespace
}  // namespace loom::walk
