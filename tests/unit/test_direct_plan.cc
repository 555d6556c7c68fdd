// Direct plans (device_paths/direct_plan.h) on host memory: every collective, 1..8
// ranks, sizes 0, 1, odd, every type and reduction, in and out of place, every
// root. The steps are run with memcpy and the host reducers in three different
// interleavings of the ranks, each of which must give the reference result,
// and a static check proves that within a phase no rank writes what another
// rank reads or writes (so on a GPU the ranks' streams may run in any order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "device_paths/direct_plan.h"
#include "math/half.h"
#include "math/reducer.h"
#include "unit/collective_cases.h"

namespace loom {
namespace {

using namespace testing_cases;  // NOLINT(google-build-using-namespace): test vocabulary

void runStep(const DirectStep& s, const Case& c) {
  const size_t es = dataTypeSize(c.type);
  switch (s.kind) {
    case DirectStepKind::kCopy:
      std::memmove(s.dst, s.src, s.count * es);
      break;
    case DirectStepKind::kReduce:
      reducerFor(c.type, c.op)(s.dst, s.dst, s.src, s.count);
      break;
    case DirectStepKind::kFinalize:
      finalizerFor(c.type, c.op)(s.dst, s.count, c.nranks);
      break;
  }
}

struct Range {
  const char* begin;
  const char* end;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

/// Within each phase, no rank writes a range another rank reads or writes.
void expectNoCrossRankHazards(const std::vector<DirectPlan>& plans, const Case& c) {
  const size_t es = dataTypeSize(c.type);
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<std::vector<Range>> writes(plans.size()), reads(plans.size());
    for (size_t r = 0; r < plans.size(); ++r) {
      for (const DirectStep& s : plans[r].phase[phase]) {
        const size_t bytes = s.count * es;
        writes[r].push_back({s.dst, s.dst + bytes});
        if (s.kind != DirectStepKind::kFinalize) reads[r].push_back({s.src, s.src + bytes});
      }
    }
    for (size_t a = 0; a < plans.size(); ++a) {
      for (size_t b = 0; b < plans.size(); ++b) {
        if (a == b) continue;
        for (const Range& w : writes[a]) {
          for (const Range& o : reads[b]) {
            ASSERT_FALSE(w.overlaps(o))
                << "phase " << phase << ": rank " << a << " writes what rank " << b << " reads";
          }
          for (const Range& o : writes[b]) {
            ASSERT_FALSE(w.overlaps(o))
                << "phase " << phase << ": ranks " << a << " and " << b << " write the same bytes";
          }
        }
      }
    }
  }
}

enum class Order { kRankByRank, kReverse, kRoundRobin };

void runAndCheck(const Case& c, Order order) {
  SCOPED_TRACE(describe(c) + " order " + std::to_string(static_cast<int>(order)));
  World w = makeWorld(c);
  std::vector<DirectBuffers> buffers;
  for (const RankBuffers& b : w.buffers) buffers.push_back({b.send, b.recv});
  std::vector<DirectPlan> plans;
  plans.reserve(static_cast<size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) {
    plans.push_back(directPlan(c.collective, c.count, c.type, c.op, c.root, r, buffers));
  }
  if (order == Order::kRankByRank) expectNoCrossRankHazards(plans, c);
  for (const DirectPlan& p : plans) {
    // The ranks meet between phases together or not at all.
    ASSERT_EQ(p.twoPhases(), plans[0].twoPhases());
    if (!p.twoPhases()) {
      ASSERT_TRUE(p.phase[1].empty());
    }
  }
  for (int phase = 0; phase < 2; ++phase) {
    if (order == Order::kRoundRobin) {
      for (size_t k = 0;; ++k) {
        bool any = false;
        for (const DirectPlan& p : plans) {
          if (k < p.phase[phase].size()) {
            runStep(p.phase[phase][k], c);
            any = true;
          }
        }
        if (!any) break;
      }
      continue;
    }
    for (int i = 0; i < c.nranks; ++i) {
      const int r = order == Order::kReverse ? c.nranks - 1 - i : i;
      for (const DirectStep& s : plans[r].phase[phase]) runStep(s, c);
    }
  }
  const size_t es = dataTypeSize(c.type);
  for (int r = 0; r < c.nranks; ++r) {
    if (!receives(c, r)) continue;
    const std::vector<char> want = expected(c, r);
    if (want.empty()) continue;  // memcmp may not be handed a null pointer, even for 0 bytes
    ASSERT_EQ(std::memcmp(w.buffers[r].recv, want.data(), want.size()), 0)
        << "rank " << r << " (" << want.size() / es << " elements)";
  }
}

bool hasInPlaceForm(Collective c) { return c != Collective::AllToAll; }

TEST(DirectPlan, EveryCollectiveMatchesTheReferenceInAnyInterleaving) {
  const Collective collectives[] = {
      Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce, Collective::AllGather,
      Collective::Broadcast, Collective::AllToAll,      Collective::Gather, Collective::Scatter};
  size_t cases = 0;
  for (Collective coll : collectives) {
    const bool reduction = coll == Collective::AllReduce || coll == Collective::ReduceScatter ||
                           coll == Collective::Reduce;
    for (int n : {1, 2, 3, 5, 8}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}}) {
        for (DataType type : kTypes) {
          std::vector<ReduceOp> ops = {ReduceOp::Sum};
          if (reduction) {
            ops = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg};
          }
          for (ReduceOp op : ops) {
            for (bool inPlace : {false, true}) {
              if (inPlace && !hasInPlaceForm(coll)) continue;
              const int root = (n * 7 + static_cast<int>(count)) % n;
              for (Order order : {Order::kRankByRank, Order::kReverse, Order::kRoundRobin}) {
                runAndCheck({coll, n, count, type, op, root, inPlace}, order);
                if (::testing::Test::HasFatalFailure()) return;
              }
              ++cases;
            }
          }
        }
      }
    }
  }
  std::printf("%zu cases, 3 interleavings each\n", cases);
}

TEST(DirectPlan, AllReduceNeedsTwoPhasesOthersOne) {
  std::vector<char> a(64), b(64);
  const std::vector<DirectBuffers> two = {{a.data(), a.data() + 32}, {b.data(), b.data() + 32}};
  EXPECT_TRUE(directPlan(Collective::AllReduce, 8, DataType::Float32, ReduceOp::Sum, 0, 0, two)
                  .twoPhases());
  EXPECT_FALSE(directPlan(Collective::AllGather, 4, DataType::Float32, ReduceOp::Sum, 0, 0, two)
                   .twoPhases());
  // One element over two ranks: rank 0 owns it and copies nothing in phase 1,
  // yet it must still meet rank 1 between the phases.
  const DirectPlan owner =
      directPlan(Collective::AllReduce, 1, DataType::Float32, ReduceOp::Sum, 0, 0, two);
  EXPECT_TRUE(owner.phase[1].empty());
  EXPECT_TRUE(owner.twoPhases());
}

TEST(DirectPlan, SendRecvAndBadRanksAreRefused) {
  std::vector<char> a(16);
  const std::vector<DirectBuffers> one = {{a.data(), a.data()}};
  EXPECT_FALSE(hasDirectPlan(Collective::Send));
  EXPECT_FALSE(hasDirectPlan(Collective::Recv));
  EXPECT_TRUE(hasDirectPlan(Collective::Scatter));
  EXPECT_THROW(directPlan(Collective::Send, 1, DataType::Float32, ReduceOp::Sum, 0, 0, one), Error);
  EXPECT_THROW(directPlan(Collective::AllReduce, 1, DataType::Float32, ReduceOp::Sum, 0, 1, one),
               Error);
  EXPECT_THROW(directPlan(Collective::Broadcast, 1, DataType::Float32, ReduceOp::Sum, 3, 0, one),
               Error);
}

}  // namespace
}  // namespace loom
