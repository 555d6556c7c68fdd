// How two ranks that read each other in place run a single-copy all-reduce
// out of place (collectives/executor/two_rank_sum.h): by shards, each whole,
// or, by default, whichever rank 0 measures faster. The way shows in the bytes
// a rank sends: a whole sum reads its peer's input (one message), shards also
// hand half the result over (one and a half).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace loomtest {
namespace {

constexpr size_t kCount = size_t{1} << 16;  // 256 KiB of floats: LOOM_SINGLE_COPY_MIN
constexpr uint64_t kWhole = kCount * sizeof(float);
constexpr uint64_t kShards = kWhole + kWhole / 2;
/// Rounds (here: calls) while the choice warms up, in blocks of three
/// (MeasuredChoice::kBlockRounds), shards first, until each way has four
/// counted rounds (MeasuredChoice::kWarmRounds); later, the last block of
/// every 64 rounds explores the way not preferred.
constexpr int kWarmCalls = 12;
constexpr int kBlock = 3;
constexpr int kExploringBlock = 61;

enum class Ways { Shards, Whole, Measured };

struct Case {
  Launch launch;
  const char* setting;
  Ways ways;
};

std::string caseName(const testing::TestParamInfo<Case>& info) {
  return std::string(launchName(info.param.launch)) + "_" + info.param.setting;
}

void PrintTo(const Case& c, std::ostream* os) { *os << launchName(c.launch) << " " << c.setting; }

/// Buffers each rank's peer can read in place: plain memory between threads,
/// registered loomMemAlloc memory between processes.
class SumBuffers {
 public:
  SumBuffers(Launch launch, loomComm_t comm) : comm_(comm) {
    if (launch == Launch::Threads) {
      plain_.resize(2 * kCount);
      base_ = plain_.data();
      return;
    }
    void* p = nullptr;
    if (loomMemAlloc(&p, 2 * kWhole) != loomSuccess) return;
    shared_ = static_cast<float*>(p);
    if (loomCommRegister(comm, p, 2 * kWhole, &handle_) != loomSuccess) return;
    base_ = shared_;
  }
  ~SumBuffers() {
    if (handle_ != nullptr) loomCommDeregister(comm_, handle_);
    loomMemFree(shared_);
  }
  SumBuffers(const SumBuffers&) = delete;
  SumBuffers& operator=(const SumBuffers&) = delete;

  float* in() const { return base_; }
  float* out() const { return base_ == nullptr ? nullptr : base_ + kCount; }

 private:
  loomComm_t comm_;
  std::vector<float> plain_;
  float* shared_ = nullptr;
  void* handle_ = nullptr;
  float* base_ = nullptr;
};

/// One all-reduce of distinct small integers (exact in float), checked.
std::string sumOnce(int rank, int call, const SumBuffers& buffers, loomComm_t comm) {
  for (size_t i = 0; i < kCount; ++i) {
    buffers.in()[i] = static_cast<float>((i + static_cast<size_t>(call)) % 97 + 100 * rank);
    buffers.out()[i] = -1;
  }
  const loomResult_t rc =
      loomAllReduce(buffers.in(), buffers.out(), kCount, loomFloat32, loomSum, comm, nullptr);
  if (rc != loomSuccess) {
    return "call " + std::to_string(call) + ": " + loomGetErrorString(rc) + ": " +
           loomGetLastError(comm) + "\n";
  }
  for (size_t i = 0; i < kCount; ++i) {
    const auto expected = static_cast<float>(2 * ((i + static_cast<size_t>(call)) % 97) + 100);
    if (buffers.out()[i] != expected) {
      return "call " + std::to_string(call) + ": element " + std::to_string(i) + " is " +
             std::to_string(buffers.out()[i]) + ", not " + std::to_string(expected) + "\n";
    }
  }
  return "";
}

class TwoRankSum : public testing::TestWithParam<Case> {};

/// What the calls' bytes say of the ways they took ("S" shards, "W" whole),
/// or why they do not fit.
std::string waysProblem(const std::string& ways, Ways expected) {
  if (expected != Ways::Measured) {
    const char only = expected == Ways::Shards ? 'S' : 'W';
    return ways.find_first_not_of(only) == std::string::npos ? ""
                                                             : "not all " + std::string(1, only);
  }
  for (int call = 0; call < kWarmCalls; ++call) {
    if (ways[call] != (call / kBlock % 2 == 0 ? 'S' : 'W')) return "warm-up not in blocks";
  }
  // Past the warm-up rank 0's decision holds for runs of calls; a choice
  // that never left the warm-up would go on in blocks of three.
  size_t longest = 0;
  for (size_t at = kWarmCalls; at < kExploringBlock;) {
    const size_t end = std::min<size_t>(ways.find_first_not_of(ways[at], at), kExploringBlock);
    longest = std::max(longest, end - at);
    at = end;
  }
  if (longest <= kBlock) return "no decision after the warm-up";
  if (ways.substr(kExploringBlock, kBlock) != std::string(kBlock, ways[kExploringBlock])) {
    return "the exploring block changed its way";
  }
  return "";
}

TEST_P(TwoRankSum, TakesTheWayItsSettingSays) {
  const Case c = GetParam();
  RunOptions o;
  o.launch = c.launch;
  o.env = {{"LOOM_TWO_RANK_SUM", c.setting}};
  const auto results = runRanks(o, [&](int rank, int, loomComm_t comm) {
    RankOutcome out;
    const SumBuffers buffers(c.launch, comm);
    if (buffers.in() == nullptr) {
      out.error = "shared buffers: " + std::string(loomGetLastError(comm)) + "\n";
      return out;
    }
    int call = 0;
    // Between processes the first call learns in the arena that the buffers
    // are shared; single-copy starts with the next.
    if (c.launch == Launch::Processes) out.error += sumOnce(rank, call++, buffers, comm);
    std::string ways;
    for (int i = 0; i < kExploringBlock + kBlock && out.error.empty(); ++i) {
      out.error += sumOnce(rank, call++, buffers, comm);
      loomCommStats stats{};
      loomCommGetStats(comm, &stats);
      ways += stats.lastCallBytesSent == kWhole    ? 'W'
              : stats.lastCallBytesSent == kShards ? 'S'
                                                   : '?';
    }
    if (out.error.empty() && !waysProblem(ways, c.ways).empty()) {
      out.error = waysProblem(ways, c.ways) + ": " + ways + "\n";
    }
    out.report = ways;  // the same on both ranks
    return out;
  });
  ASSERT_EQ(failures(results), "");
  EXPECT_EQ(results[0].outcome.report, results[1].outcome.report);
}

INSTANTIATE_TEST_SUITE_P(Ways, TwoRankSum,
                         testing::Values(Case{Launch::Threads, "shards", Ways::Shards},
                                         Case{Launch::Threads, "whole", Ways::Whole},
                                         Case{Launch::Threads, "auto", Ways::Measured},
                                         Case{Launch::Processes, "shards", Ways::Shards},
                                         Case{Launch::Processes, "whole", Ways::Whole},
                                         Case{Launch::Processes, "auto", Ways::Measured}),
                         caseName);

}  // namespace
}  // namespace loomtest
