// Every supported (collective, algorithm) run through the plan simulator for
// many world sizes, counts, roots, in-place layouts and slice sizes, against
// results computed directly from the inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "collectives/algorithms.h"
#include "core/error.h"
#include "tools/simulate/simulator.h"

namespace loom {
namespace {

using Inputs = std::vector<std::vector<double>>;

// Integer-valued doubles: sums over up to 33 ranks stay exact.
double sumValue(int rank, size_t i) { return rank * 1000003.0 + static_cast<double>(i); }
// Values whose max/min move around between ranks, so a dropped contribution shows.
double mixedValue(int rank, size_t i) {
  return static_cast<double>((static_cast<size_t>(rank) * 7919 + i * 104729) % 1009);
}

Inputs makeInputs(const SimCollective& call, double (*value)(int, size_t)) {
  Inputs in(call.nranks);
  for (int r = 0; r < call.nranks; ++r) {
    const size_t n = inputElements(call.collective, call.count, call.nranks, r, call.root);
    in[r].resize(n);
    for (size_t i = 0; i < n; ++i) in[r][i] = value(r, i);
  }
  return in;
}

double reduceAll(const Inputs& in, size_t i, ReduceOp op) {
  double acc = in[0][i];
  for (size_t r = 1; r < in.size(); ++r) {
    const double v = in[r][i];
    acc = op == ReduceOp::Max ? std::max(acc, v) : op == ReduceOp::Min ? std::min(acc, v) : acc + v;
  }
  return op == ReduceOp::Avg ? acc / static_cast<double>(in.size()) : acc;
}

// The reference: each collective's definition, written directly.
Inputs expectedOutputs(const SimCollective& call, const Inputs& in, ReduceOp op) {
  const int n = call.nranks;
  const size_t c = call.count;
  Inputs out(n);
  for (int r = 0; r < n; ++r) {
    out[r].resize(outputElements(call.collective, c, n, r, call.root));
    for (size_t k = 0; k < out[r].size(); ++k) {
      double& x = out[r][k];
      const size_t block = k / std::max<size_t>(c, 1);
      const size_t i = k % std::max<size_t>(c, 1);
      switch (call.collective) {
        case Collective::AllReduce:
        case Collective::Reduce:
          x = reduceAll(in, k, op);
          break;
        case Collective::ReduceScatter:
          x = reduceAll(in, r * c + k, op);
          break;
        case Collective::AllGather:
        case Collective::Gather:
          x = in[block][i];
          break;
        case Collective::Broadcast:
          x = in[call.root][k];
          break;
        case Collective::Scatter:
          x = in[call.root][r * c + k];
          break;
        case Collective::AllToAll:
          x = in[block][r * c + i];
          break;
        default:
          break;
      }
    }
  }
  return out;
}

std::string describe(const SimCollective& call, const SimOptions& o) {
  return fmt::format(
      "{} {} nranks={} count={} root={} inPlace={} channels={} alias={} slice={} depth={} "
      "order={}",
      toString(call.algorithm), toString(call.collective), call.nranks, call.count, call.root,
      call.inPlace, call.channels, o.aliasInPlace, o.sliceElements, o.fifoDepth,
      o.streamOrder == SimStreamOrder::Merged ? "merged" : "independent");
}

// Runs one configuration; returns false (after one failure message) on error.
bool runAndCheck(const SimCollective& call, const SimOptions& options,
                 double (*value)(int, size_t) = sumValue) {
  const Inputs in = makeInputs(call, value);
  SimResult result;
  try {
    result = simulateCollective(call, in, options);
  } catch (const Error& e) {
    ADD_FAILURE() << describe(call, options) << ": " << e.what();
    return false;
  }
  const Inputs want = expectedOutputs(call, in, options.op);
  for (int r = 0; r < call.nranks; ++r) {
    if (result.outputs[r].size() != want[r].size()) {
      ADD_FAILURE() << describe(call, options) << ": rank " << r << " output size";
      return false;
    }
    for (size_t k = 0; k < want[r].size(); ++k) {
      const double got = result.outputs[r][k];
      const bool ok = options.op == ReduceOp::Avg
                          ? std::abs(got - want[r][k]) <= 1e-9 * std::max(1.0, std::abs(want[r][k]))
                          : got == want[r][k];
      if (!ok) {
        ADD_FAILURE() << describe(call, options) << ": rank " << r << " element " << k << " is "
                      << got << ", expected " << want[r][k];
        return false;
      }
    }
  }
  return true;
}

struct Case {
  Collective collective;
  Algorithm algorithm;
};

std::string caseName(const testing::TestParamInfo<Case>& info) {
  return toString(info.param.algorithm) + toString(info.param.collective);
}

bool rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter;
}

const Case kCases[] = {
    {Collective::AllReduce, Algorithm::Ring},     {Collective::AllGather, Algorithm::Ring},
    {Collective::ReduceScatter, Algorithm::Ring}, {Collective::Broadcast, Algorithm::Ring},
    {Collective::Reduce, Algorithm::Ring},        {Collective::AllReduce, Algorithm::Tree},
    {Collective::Broadcast, Algorithm::Tree},     {Collective::Reduce, Algorithm::Tree},
    {Collective::AllToAll, Algorithm::Pairwise},  {Collective::Gather, Algorithm::Star},
    {Collective::Scatter, Algorithm::Star},
};

class CollectiveSim : public testing::TestWithParam<Case> {};

// World sizes 1..9 and around powers of two, counts that leave chunks empty,
// uneven and prime, slices of one element, an odd size and larger than any
// step; in place with shared and with separate memory.
TEST_P(CollectiveSim, MatchesReferenceAcrossShapes) {
  const Case k = GetParam();
  std::vector<int> sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 31, 32, 33};
  for (int n : sizes) {
    for (size_t count : {size_t{0}, size_t{1}, size_t(n - 1), size_t(n), size_t{97}}) {
      std::vector<int> roots = {0};
      if (rooted(k.collective) && n > 1) roots.push_back(n - 1);
      for (int root : roots) {
        for (int mode = 0; mode < 3; ++mode) {  // not in place, in place aliased, in place split
          for (size_t slice : {size_t{1}, size_t{7}, size_t{1} << 16}) {
            // Element-sized slices of the largest all-to-alls add time, not coverage.
            if (slice == 1 && n > 17 && count == 97) continue;
            SimCollective call{k.collective, k.algorithm, n, count, root, mode > 0};
            SimOptions options;
            options.sliceElements = slice;
            options.aliasInPlace = mode == 1;
            if (!runAndCheck(call, options)) return;
          }
        }
      }
    }
  }
}

// One large count, several slices per step, a few world sizes.
TEST_P(CollectiveSim, LargeCount) {
  const Case k = GetParam();
  // Per-rank counts multiply by nranks: keep those worlds small.
  const bool perRank = k.collective == Collective::AllGather ||
                       k.collective == Collective::ReduceScatter ||
                       k.collective == Collective::AllToAll || k.collective == Collective::Gather ||
                       k.collective == Collective::Scatter;
  const std::vector<int> sizes = perRank ? std::vector<int>{2, 3} : std::vector<int>{2, 5, 8};
  for (int n : sizes) {
    for (bool inPlace : {false, true}) {
      SimCollective call{k.collective, k.algorithm, n, 1000003, n - 1, inPlace};
      SimOptions options;
      options.sliceElements = size_t{1} << 16;
      if (!runAndCheck(call, options)) return;
    }
  }
}

// Reductions with max, min and avg: avg checks `finalize` runs exactly once.
// Only instantiated for the collectives that reduce.
class ReductionSim : public CollectiveSim {};

std::vector<Case> reductionCases() {
  std::vector<Case> out;
  for (const Case& k : kCases) {
    if (k.collective == Collective::AllReduce || k.collective == Collective::ReduceScatter ||
        k.collective == Collective::Reduce) {
      out.push_back(k);
    }
  }
  return out;
}

TEST_P(ReductionSim, OtherReduceOps) {
  const Case k = GetParam();
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
    for (int n : {1, 2, 3, 5, 8, 13}) {
      for (size_t count : {size_t{1}, size_t(n + 2), size_t{97}}) {
        for (bool inPlace : {false, true}) {
          SimCollective call{k.collective, k.algorithm, n, count, n / 2, inPlace};
          SimOptions options;
          options.op = op;
          options.sliceElements = 7;
          if (!runAndCheck(call, options, mixedValue)) return;
        }
      }
    }
  }
}

// FIFO depth 2 must always work (the executor's links are at least that deep);
// depth 1 must work for everything but the ring's fused receive-and-send
// steps, which need one message in flight and room for the next.
TEST_P(CollectiveSim, FifoDepth) {
  const Case k = GetParam();
  const bool depthOneDeadlocks =
      k.algorithm == Algorithm::Ring &&
      (k.collective == Collective::AllReduce || k.collective == Collective::AllGather ||
       k.collective == Collective::ReduceScatter);
  for (int n : {2, 3, 4, 5, 8, 9, 16, 17}) {
    for (size_t count : {size_t{1}, size_t(n + 1), size_t{97}}) {
      for (size_t slice : {size_t{1}, size_t{7}}) {
        SimCollective call{k.collective, k.algorithm, n, count, n - 1, false};
        SimOptions options;
        options.sliceElements = slice;
        options.fifoDepth = 2;
        if (!runAndCheck(call, options)) return;
        options.fifoDepth = 1;
        if (!depthOneDeadlocks) {
          if (!runAndCheck(call, options)) return;
        }
      }
    }
  }
}

// Streams each with their own cursor and channel (a future executor might run
// them so): plans stay deadlock-free and correct.
TEST_P(CollectiveSim, IndependentStreams) {
  const Case k = GetParam();
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33}) {
    for (size_t count : {size_t{1}, size_t{97}}) {
      SimCollective call{k.collective, k.algorithm, n, count, n - 1, false};
      SimOptions options;
      options.sliceElements = 7;
      options.streamOrder = SimStreamOrder::Independent;
      if (!runAndCheck(call, options)) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, CollectiveSim, testing::ValuesIn(kCases), caseName);
INSTANTIATE_TEST_SUITE_P(Plans, ReductionSim, testing::ValuesIn(reductionCases()), caseName);

TEST(Simulator, RingAllReduceDeadlocksAtDepthOne) {
  const SimCollective call{Collective::AllReduce, Algorithm::Ring, 4, 8, 0, false};
  SimOptions options;
  options.fifoDepth = 1;
  try {
    simulateCollective(call, makeInputs(call, sumValue), options);
    ADD_FAILURE() << "expected a deadlock";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InternalError);
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("waits for room"), std::string::npos) << e.what();
  }
}

TEST(Simulator, RingAllReduceTraffic) {
  for (int n : {2, 3, 7, 16}) {
    const size_t count = 1000;
    const SimCollective call{Collective::AllReduce, Algorithm::Ring, n, count, 0, false};
    SimOptions options;
    options.sliceElements = count;  // one message per step
    const SimResult result = simulateCollective(call, makeInputs(call, sumValue), options);
    EXPECT_EQ(result.stats.maxSteps, static_cast<size_t>(2 * n - 1));
    for (int r = 0; r < n; ++r) {
      const size_t mine = chunkSize(count, n, r);
      const size_t next = chunkSize(count, n, (r + 1) % n);
      EXPECT_EQ(result.stats.messagesSent[r], static_cast<size_t>(2 * (n - 1)));
      EXPECT_EQ(result.stats.elementsSent[r], 2 * count - mine - next);
    }
    // One step per round, never waiting: the ring is perfectly in step.
    EXPECT_EQ(result.stats.rounds, static_cast<size_t>(2 * n - 1));
  }
}

// Channels: the ring all-reduce cut into pieces, each on its own link set,
// run as the executor runs them (one cursor and one FIFO per channel) and
// with every stream independent. Counts below the channel count leave
// channels empty; slices of 1 and 7 elements and one larger than any step.
TEST(ChannelSim, RingCollectivesMatchReference) {
  for (Collective collective :
       {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    for (int channels : {2, 3, 8}) {
      for (int n : {1, 2, 3, 5, 8}) {
        for (size_t count :
             {size_t{0}, size_t{1}, size_t(channels - 1), size_t{97}, size_t{1000}}) {
          for (int mode = 0; mode < 3; ++mode) {
            for (size_t slice : {size_t{1}, size_t{7}, size_t{1} << 16}) {
              for (SimStreamOrder order : {SimStreamOrder::Merged, SimStreamOrder::Independent}) {
                SimCollective call{collective, Algorithm::Ring, n, count, 0, mode > 0};
                call.channels = channels;
                SimOptions options;
                options.sliceElements = slice;
                options.aliasInPlace = mode == 1;
                options.streamOrder = order;
                if (!runAndCheck(call, options)) return;
              }
            }
          }
        }
        if (collective == Collective::AllGather) continue;
        for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
          SimCollective call{collective, Algorithm::Ring, n, 97, 0, false};
          call.channels = channels;
          SimOptions options;
          options.op = op;
          options.sliceElements = 7;
          if (!runAndCheck(call, options, mixedValue)) return;
        }
      }
    }
  }
}

// Each channel carries its own piece: the same bytes in total as one ring,
// spread evenly, and every step of a stream names one channel.
// All-reduce sends each element 2(n-1) times around the ring, all-gather and
// reduce-scatter (n-1) times per rank's block.
TEST(ChannelSim, PiecesSplitTheTraffic) {
  const int n = 4;
  const size_t count = 1200;
  for (auto [collective, sendsPerElement] :
       {std::pair{Collective::AllReduce, size_t{2 * (n - 1)}},
        std::pair{Collective::AllGather, size_t{n * (n - 1)}},
        std::pair{Collective::ReduceScatter, size_t{n * (n - 1)}}}) {
    PlanRequest req;
    req.collective = collective;
    req.nranks = n;
    req.count = count;
    for (int channels : {1, 2, 3}) {
      req.channels = channels;
      std::vector<size_t> perChannel(static_cast<size_t>(channels), 0);
      for (int r = 0; r < n; ++r) {
        req.rank = r;
        for (const auto& stream : makePlan(req).streams) {
          for (const Step& s : stream) {
            EXPECT_EQ(s.channel, stream.front().channel) << toString(s);
            if (stepSends(s.kind)) perChannel[s.channel] += s.count;
          }
        }
      }
      for (int k = 0; k < channels; ++k) {
        EXPECT_EQ(perChannel[static_cast<size_t>(k)], sendsPerElement * (count / channels))
            << toString(collective) << ", " << channels << " channels, channel " << k;
      }
    }
  }
}

TEST(ChannelSim, RefusesWhatItCannotSplit) {
  PlanRequest req;
  req.nranks = 3;
  req.count = 10;
  req.channels = 2;
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::AllToAll}) {
    req.collective = c;
    EXPECT_THROW(makePlan(req), Error) << toString(c);
  }
  req.collective = Collective::AllReduce;
  req.algorithm = Algorithm::Tree;
  EXPECT_THROW(makePlan(req), Error);
  req.algorithm = Algorithm::Ring;
  req.channels = 0;
  EXPECT_THROW(makePlan(req), Error);
  req.channels = kMaxPlanChannels + 1;
  EXPECT_THROW(makePlan(req), Error);
}

TEST(Simulator, SlicesPipelineAChain) {
  // A broadcast chain over 8 ranks in 10 slices: the last slice leaves the
  // root in round 9 and reaches rank 7 in round 16; 17 rounds, not 70.
  const SimCollective call{Collective::Broadcast, Algorithm::Ring, 8, 100, 0, true};
  SimOptions options;
  options.sliceElements = 10;
  const SimResult result = simulateCollective(call, makeInputs(call, sumValue), options);
  EXPECT_EQ(result.stats.rounds, 17u);
}

// Send and Recv pair across ranks: each rank sends to rank+shift and receives
// from rank-shift, as two jobs of one group.
TEST(Simulator, SendRecvShifts) {
  for (int n : {1, 2, 3, 5, 8}) {
    for (int shift = 0; shift < n; ++shift) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{97}}) {
        std::vector<std::vector<SimJob>> jobs(n);
        for (int r = 0; r < n; ++r) {
          PlanRequest req;
          req.algorithm = Algorithm::Pairwise;
          req.nranks = n;
          req.rank = r;
          req.count = count;
          req.collective = Collective::Send;
          req.root = (r + shift) % n;
          SimJob send;
          send.plan = makePlan(req);
          for (size_t i = 0; i < count; ++i) send.buffers.memory.push_back(sumValue(r, i));
          send.buffers.inputElements = count;
          req.collective = Collective::Recv;
          req.root = (r - shift + n) % n;
          SimJob recv;
          recv.plan = makePlan(req);
          recv.buffers.memory.assign(count, std::nan(""));
          recv.buffers.outputElements = count;
          jobs[r].push_back(std::move(send));
          jobs[r].push_back(std::move(recv));
        }
        SimOptions options;
        options.sliceElements = 7;
        options.fifoDepth = 1;
        ASSERT_NO_THROW(simulatePlans(jobs, options)) << n << " " << shift;
        for (int r = 0; r < n; ++r) {
          const int from = (r - shift + n) % n;
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(jobs[r][1].buffers.memory[i], sumValue(from, i)) << n << " " << shift;
          }
        }
      }
    }
  }
}

// Hand-made broken plans: the simulator must name the problem.
std::vector<std::vector<SimJob>> twoRanks(std::vector<Step> a, std::vector<Step> b) {
  std::vector<std::vector<SimJob>> jobs(2);
  for (int r = 0; r < 2; ++r) {
    SimJob job;
    job.plan.streams.push_back(r == 0 ? a : b);
    job.buffers.memory.assign(20, 1.0);
    job.buffers.inputElements = 10;
    job.buffers.outputOffset = 10;
    job.buffers.outputElements = 10;
    jobs[r].push_back(std::move(job));
  }
  return jobs;
}

Step step(StepKind kind, int peer, BufferId buffer, size_t count) {
  Step s;
  s.kind = kind;
  s.sendPeer = s.recvPeer = peer;
  s.src = s.dst = BufferRef{buffer, 0};
  s.count = count;
  return s;
}

void expectFailure(std::vector<std::vector<SimJob>> jobs, const std::string& needle) {
  try {
    simulatePlans(jobs, SimOptions{});
    ADD_FAILURE() << "expected failure mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Simulator, ReportsBrokenPlans) {
  using K = StepKind;
  const auto out = BufferId::Output;
  const auto in = BufferId::Input;
  // Both ranks wait for each other.
  expectFailure(twoRanks({step(K::Recv, 1, out, 4)}, {step(K::Recv, 0, out, 4)}), "deadlock");
  // Sizes disagree.
  expectFailure(twoRanks({step(K::Send, 1, in, 4)}, {step(K::Recv, 0, out, 5)}), "expects 5");
  // Writes into the input.
  expectFailure(twoRanks({step(K::Send, 1, in, 4)}, {step(K::Recv, 0, in, 4)}), "input");
  // Reads past the end.
  expectFailure(twoRanks({step(K::Send, 1, in, 11)}, {step(K::Recv, 0, out, 11)}), "input[0, 11)");
  // A peer that does not exist.
  expectFailure(twoRanks({step(K::Send, 2, in, 4)}, {}), "peer 2");
  // A message nobody receives.
  expectFailure(twoRanks({step(K::Send, 1, in, 4)}, {}), "never received");
}

TEST(Simulator, RejectsSendRecvAndWrongInputs) {
  SimCollective call{Collective::Send, Algorithm::Pairwise, 2, 4, 1, false};
  EXPECT_THROW(simulateCollective(call, Inputs(2), SimOptions{}), Error);
  call = SimCollective{Collective::AllReduce, Algorithm::Ring, 2, 4, 0, false};
  EXPECT_THROW(simulateCollective(call, Inputs(2, std::vector<double>(3)), SimOptions{}), Error);
  EXPECT_THROW(simulateCollective(call, Inputs(3, std::vector<double>(4)), SimOptions{}), Error);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// An all-reduce plan made for ring positions and placed on a permuted rank
// order (what the communicator does with the topology's ring) still sums
// every rank's input on every rank, for ring and tree.
TEST(Simulator, PlacedAllReduceMatchesTheSum) {
  std::mt19937 rng(7);
  for (Algorithm algorithm : {Algorithm::Ring, Algorithm::Tree}) {
    for (int n : {2, 3, 5, 8}) {
      std::vector<int> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<int> positionOf(static_cast<size_t>(n));
      for (int p = 0; p < n; ++p) positionOf[static_cast<size_t>(order[p])] = p;
      const size_t count = 103;
      std::vector<std::vector<SimJob>> jobs(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        PlanRequest req;
        req.collective = Collective::AllReduce;
        req.algorithm = algorithm;
        req.nranks = n;
        req.rank = positionOf[static_cast<size_t>(r)];
        req.count = count;
        SimJob job;
        job.plan = placePlan(makePlan(req), order);
        for (size_t i = 0; i < count; ++i) job.buffers.memory.push_back(sumValue(r, i));
        job.buffers.memory.resize(2 * count, std::nan(""));
        job.buffers.inputElements = count;
        job.buffers.outputOffset = count;
        job.buffers.outputElements = count;
        jobs[static_cast<size_t>(r)].push_back(std::move(job));
      }
      SimOptions options;
      options.sliceElements = 5;
      ASSERT_NO_THROW(simulatePlans(jobs, options)) << toString(algorithm) << " n=" << n;
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
          double expected = 0;
          for (int q = 0; q < n; ++q) expected += sumValue(q, i);
          ASSERT_EQ(jobs[static_cast<size_t>(r)][0].buffers.memory[count + i], expected)
              << toString(algorithm) << " n=" << n << " rank " << r << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// How ranks sit on hosts in the hierarchical tests.
enum class Seating { Contiguous, Interleaved, Shuffled };

HostGroups seat(int hosts, int perHost, Seating how, std::mt19937& rng) {
  std::vector<int> ranks(static_cast<size_t>(hosts * perHost));
  std::iota(ranks.begin(), ranks.end(), 0);
  if (how == Seating::Shuffled) std::shuffle(ranks.begin(), ranks.end(), rng);
  HostGroups groups(static_cast<size_t>(hosts));
  for (size_t i = 0; i < ranks.size(); ++i) {
    const size_t h = how == Seating::Interleaved ? i % static_cast<size_t>(hosts)
                                                 : i / static_cast<size_t>(perHost);
    groups[h].push_back(ranks[i]);
  }
  return groups;
}

// One layout through `algorithm`: every count, slices of 1 and 7 elements and
// one larger than a step, in place (aliased and split) and not; then max, min
// and avg. False after the first failure.
bool checkLayout(Algorithm algorithm, const HostGroups& groups, const std::vector<size_t>& counts) {
  int n = 0;
  for (const auto& g : groups) n += static_cast<int>(g.size());
  for (size_t count : counts) {
    for (int mode = 0; mode < 3; ++mode) {
      for (size_t slice : {size_t{1}, size_t{7}, size_t{1} << 16}) {
        SimCollective call{Collective::AllReduce, algorithm, n, count, 0, mode > 0};
        SimOptions options;
        options.hosts = groups;
        options.sliceElements = slice;
        options.aliasInPlace = mode == 1;
        if (!runAndCheck(call, options)) return false;
      }
    }
    for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
      SimCollective call{Collective::AllReduce, algorithm, n, count, 0, false};
      SimOptions options;
      options.hosts = groups;
      options.op = op;
      options.sliceElements = 7;
      if (!runAndCheck(call, options, mixedValue)) return false;
    }
  }
  return true;
}

// Every layout of 2..4 hosts x 2..4 ranks, counts that leave shards (and
// shards of shards) empty or uneven, slices of 1 and 7 elements and one
// larger than a step, in place (aliased and split) and not, every reduce op.
TEST(HierarchicalSim, MatchesReferenceAcrossLayouts) {
  std::mt19937 rng(11);
  for (int hosts : {2, 3, 4}) {
    for (int perHost : {2, 3, 4}) {
      const size_t n = static_cast<size_t>(hosts * perHost);
      for (Seating how : {Seating::Contiguous, Seating::Interleaved, Seating::Shuffled}) {
        const std::vector<size_t> counts = {0, 1, size_t(perHost - 1), n - 1, n, 97};
        if (!checkLayout(Algorithm::Hierarchical, seat(hosts, perHost, how, rng), counts)) return;
      }
    }
  }
}

TEST(HierarchicalSim, LargeCount) {
  std::mt19937 rng(12);
  for (bool inPlace : {false, true}) {
    SimCollective call{Collective::AllReduce, Algorithm::Hierarchical, 6, 1000003, 0, inPlace};
    SimOptions options;
    options.hosts = seat(3, 2, Seating::Interleaved, rng);
    options.sliceElements = size_t{1} << 16;
    if (!runAndCheck(call, options)) return;
  }
}

// The hierarchical all-reduce with its cross-host phase on several channels.
TEST(ChannelSim, HierarchicalMatchesReference) {
  std::mt19937 rng(31);
  for (int channels : {2, 3}) {
    for (int hosts : {2, 3}) {
      for (int perHost : {2, 3}) {
        const HostGroups groups = seat(hosts, perHost, Seating::Shuffled, rng);
        const int n = hosts * perHost;
        for (size_t count : {size_t{0}, size_t{1}, size_t(n + 1), size_t{97}}) {
          for (int mode = 0; mode < 3; ++mode) {
            for (size_t slice : {size_t{1}, size_t{7}}) {
              SimCollective call{
                  Collective::AllReduce, Algorithm::Hierarchical, n, count, 0, mode > 0};
              call.channels = channels;
              SimOptions options;
              options.hosts = groups;
              options.sliceElements = slice;
              options.aliasInPlace = mode == 1;
              if (!runAndCheck(call, options)) return;
            }
          }
        }
      }
    }
  }
}

// What crosses hosts: each host sends 2(H-1)/H of the message in total, the
// ring placed with one crossing per host sends 2(n-1)/n of it over each crossing.
TEST(HierarchicalSim, EachHostSendsItsShareOnce) {
  std::mt19937 rng(13);
  for (int hosts : {2, 4}) {
    for (int perHost : {2, 4}) {
      const HostGroups groups = seat(hosts, perHost, Seating::Shuffled, rng);
      std::vector<int> hostOf(static_cast<size_t>(hosts * perHost));
      for (int h = 0; h < hosts; ++h) {
        for (int r : groups[static_cast<size_t>(h)]) hostOf[static_cast<size_t>(r)] = h;
      }
      const size_t count = size_t{48} * 1000;  // divisible by every host x rank count here
      std::vector<size_t> crossing(static_cast<size_t>(hosts), 0);
      for (int r = 0; r < hosts * perHost; ++r) {
        for (const RankPlan& phase : hierarchicalAllReduce(groups, r, count)) {
          for (const auto& stream : phase.streams) {
            for (const Step& s : stream) {
              if (s.sendPeer >= 0 &&
                  hostOf[static_cast<size_t>(s.sendPeer)] != hostOf[static_cast<size_t>(r)]) {
                crossing[static_cast<size_t>(hostOf[static_cast<size_t>(r)])] += s.count;
              }
            }
          }
        }
      }
      for (int h = 0; h < hosts; ++h) {
        EXPECT_EQ(crossing[static_cast<size_t>(h)], 2 * (hosts - 1) * count / hosts)
            << hosts << " hosts x " << perHost << ", host " << h;
      }
    }
  }
}

// The two-level tree: any host sizes (one rank per host included), every
// seating, counts 0..97, slices, in place and not, every reduce op.
TEST(HostTreeSim, MatchesReferenceAcrossLayouts) {
  std::mt19937 rng(21);
  std::vector<HostGroups> layouts = {{{0}, {1}}, {{0, 1, 2}, {3}}, {{4, 0}, {2}, {1, 3, 5}}};
  for (int hosts : {2, 3, 4}) {
    for (int perHost : {1, 2, 3}) {
      for (Seating how : {Seating::Contiguous, Seating::Interleaved, Seating::Shuffled}) {
        layouts.push_back(seat(hosts, perHost, how, rng));
      }
    }
  }
  for (const HostGroups& groups : layouts) {
    if (!checkLayout(Algorithm::HostTree, groups, {0, 1, 5, 97})) return;
  }
}

// Only each host's first rank talks to other hosts, and it sends the whole
// message up and down the tree a bounded number of times.
TEST(HostTreeSim, OnlyLeadersCrossHosts) {
  const HostGroups groups = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}};
  for (int r = 0; r < 16; ++r) {
    for (const RankPlan& phase : hostTreeAllReduce(groups, r, 1000, false)) {
      for (const auto& stream : phase.streams) {
        for (const Step& s : stream) {
          for (int peer : {s.sendPeer, s.recvPeer}) {
            if (peer < 0 || peer / 4 == r / 4) continue;
            EXPECT_EQ(r % 4, 0) << "rank " << r << " talks to rank " << peer << " on another host";
            EXPECT_EQ(peer % 4, 0) << "rank " << r << " talks to non-leader " << peer;
          }
        }
      }
    }
  }
  EXPECT_FALSE(hostTreeFits({{0, 1, 2}}));
  EXPECT_FALSE(hostTreeFits({{0, 1}, {}}));
  EXPECT_TRUE(hostTreeFits({{0}, {1, 2, 3}}));
  EXPECT_THROW(hostTreeAllReduce({{0, 1}}, 0, 4, false), Error);
  EXPECT_THROW(hostTreeAllReduce({{0}, {1}}, 2, 4, false), Error);
}

TEST(HierarchicalSim, RejectsLayoutsItCannotRun) {
  EXPECT_FALSE(hierarchicalFits({{0, 1, 2, 3}}));       // one host
  EXPECT_FALSE(hierarchicalFits({{0}, {1}}));           // one rank per host
  EXPECT_FALSE(hierarchicalFits({{0, 1}, {2, 3, 4}}));  // unequal hosts
  EXPECT_TRUE(hierarchicalFits({{0, 2}, {1, 3}}));
  EXPECT_THROW(hierarchicalAllReduce({{0, 1}, {2, 3, 4}}, 0, 10), Error);
  EXPECT_THROW(hierarchicalAllReduce({{0, 1}, {2, 3}}, 7, 10), Error);  // rank on no host
  PlanRequest req;
  req.algorithm = Algorithm::Hierarchical;
  req.nranks = 4;
  EXPECT_THROW(makePlan(req), Error);  // phases, not one plan
}

}  // namespace
}  // namespace loom
