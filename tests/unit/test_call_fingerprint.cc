// callFingerprint (collectives/executor/direct_executor.h): ranks compare it to
// notice that they are in different calls, and its low 32 bits stamp every
// link message. A change in any one field of a call must change it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "collectives/executor/direct_executor.h"

namespace loom {
namespace {

struct Call {
  Collective collective = Collective::AllReduce;
  size_t count = 0;
  DataType type = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;

  uint64_t fingerprint() const { return callFingerprint(collective, count, type, op, root); }
};

uint32_t stamp(uint64_t fingerprint) { return static_cast<uint32_t>(fingerprint); }

// Calls that differ in exactly one field from `base`.
std::vector<Call> neighbours(const Call& base) {
  std::vector<Call> out;
  for (int c = 0; c < static_cast<int>(Collective::Recv) + 1; ++c) {
    if (static_cast<Collective>(c) == base.collective) continue;
    Call n = base;
    n.collective = static_cast<Collective>(c);
    out.push_back(n);
  }
  for (int t = 0; t < kNumDataTypes; ++t) {
    if (static_cast<DataType>(t) == base.type) continue;
    Call n = base;
    n.type = static_cast<DataType>(t);
    out.push_back(n);
  }
  for (int o = 0; o < kNumReduceOps; ++o) {
    if (static_cast<ReduceOp>(o) == base.op) continue;
    Call n = base;
    n.op = static_cast<ReduceOp>(o);
    out.push_back(n);
  }
  for (const size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{97}, size_t{1} << 20,
                             (size_t{1} << 32) + 1, SIZE_MAX}) {
    if (count == base.count) continue;
    Call n = base;
    n.count = count;
    out.push_back(n);
  }
  for (const int root : {0, 1, 2, 7, 1023, 1 << 20, -1}) {
    if (root == base.root) continue;
    Call n = base;
    n.root = root;
    out.push_back(n);
  }
  return out;
}

TEST(CallFingerprint, AnyOneFieldChangedChangesItAndTheLinkStamp) {
  std::vector<Call> bases;
  for (const size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{97}, size_t{4096}}) {
    for (const int root : {0, 1, 3}) {
      for (const DataType type : {DataType::Float32, DataType::Int8, DataType::Bfloat16}) {
        bases.push_back({Collective::AllReduce, count, type, ReduceOp::Sum, root});
        bases.push_back({Collective::Broadcast, count, type, ReduceOp::Max, root});
      }
    }
  }
  int compared = 0;
  for (const Call& base : bases) {
    for (const Call& other : neighbours(base)) {
      ASSERT_NE(base.fingerprint(), other.fingerprint())
          << "count " << base.count << " vs " << other.count << ", root " << base.root << " vs "
          << other.root;
      EXPECT_NE(stamp(base.fingerprint()), stamp(other.fingerprint()))
          << "count " << base.count << " vs " << other.count << ", root " << base.root << " vs "
          << other.root;
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(CallFingerprint, NeighbouringCountsAndRootsNeverMeet) {
  // Off-by-one counts and roots are the mismatches callers actually make.
  for (size_t count = 0; count < 4096; ++count) {
    const Call a{Collective::AllReduce, count, DataType::Float32, ReduceOp::Sum, 0};
    const Call b{Collective::AllReduce, count + 1, DataType::Float32, ReduceOp::Sum, 0};
    ASSERT_NE(stamp(a.fingerprint()), stamp(b.fingerprint())) << count;
  }
  for (int root = 0; root < 4096; ++root) {
    const Call a{Collective::Reduce, 64, DataType::Float32, ReduceOp::Sum, root};
    const Call b{Collective::Reduce, 64, DataType::Float32, ReduceOp::Sum, root + 1};
    ASSERT_NE(stamp(a.fingerprint()), stamp(b.fingerprint())) << root;
  }
}

TEST(CallFingerprint, IsNeverZeroAndTheSameOnEveryCall) {
  // The header promises never 0.
  const Call empty{};
  EXPECT_NE(empty.fingerprint(), 0u);
  EXPECT_EQ(empty.fingerprint(), empty.fingerprint());
  const Call big{Collective::AllGather, SIZE_MAX, DataType::Float64, ReduceOp::Min, -1};
  EXPECT_NE(big.fingerprint(), 0u);
  EXPECT_EQ(big.fingerprint(),
            callFingerprint(Collective::AllGather, SIZE_MAX, DataType::Float64, ReduceOp::Min, -1));
}

TEST(CallFingerprint, AnExposureRoundNeverPassesForAnArenaRound) {
  // A single-copy exposure round publishes the call tagged, so a rank that
  // took the arena for the same call sees a mismatch, not a round of its own.
  for (size_t count = 0; count < 2000; ++count) {
    const uint64_t call =
        callFingerprint(Collective::AllReduce, count, DataType::Float32, ReduceOp::Sum, 0);
    EXPECT_NE(exposureCall(call), call) << count;
    EXPECT_NE(exposureCall(call), 0u) << count;
    EXPECT_EQ(exposureCall(call), exposureCall(call));
  }
  EXPECT_NE(exposureCall(exposureCall(1)), 0u);
}

}  // namespace
}  // namespace loom
