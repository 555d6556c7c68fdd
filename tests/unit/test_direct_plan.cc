// Direct plans (comm/direct_plan.h) on host memory: every collective, 1..8
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

#include "comm/direct_plan.h"
#include "core/error.h"
#include "math/half.h"
#include "math/reducer.h"

namespace loom {
namespace {

const DataType kTypes[] = {
    DataType::Int8,   DataType::Uint8,   DataType::Int32,   DataType::Uint32,  DataType::Int64,
    DataType::Uint64, DataType::Float16, DataType::Float32, DataType::Float64, DataType::Bfloat16};

/// Stores small integers, exact in every type.
void storeValue(DataType t, double v, char* out) {
  switch (t) {
    case DataType::Int8:
      *reinterpret_cast<int8_t*>(out) = static_cast<int8_t>(v);
      break;
    case DataType::Uint8:
      *reinterpret_cast<uint8_t*>(out) = static_cast<uint8_t>(v);
      break;
    case DataType::Int32:
      *reinterpret_cast<int32_t*>(out) = static_cast<int32_t>(v);
      break;
    case DataType::Uint32:
      *reinterpret_cast<uint32_t*>(out) = static_cast<uint32_t>(v);
      break;
    case DataType::Int64:
      *reinterpret_cast<int64_t*>(out) = static_cast<int64_t>(v);
      break;
    case DataType::Uint64:
      *reinterpret_cast<uint64_t*>(out) = static_cast<uint64_t>(v);
      break;
    case DataType::Float32:
      *reinterpret_cast<float*>(out) = static_cast<float>(v);
      break;
    case DataType::Float64:
      *reinterpret_cast<double*>(out) = v;
      break;
    case DataType::Float16: {
      const uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case DataType::Bfloat16: {
      const uint16_t h = floatToBf16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
  }
}

double valueOf(ReduceOp op, int rank, size_t i) {
  // Products of 1s and 2s stay exact (and wrap exactly in 8-bit integers).
  if (op == ReduceOp::Prod) return static_cast<double>(1 + (rank + i) % 2);
  return static_cast<double>((static_cast<size_t>(rank) * 3 + i * 7) % 11 + 1);
}

struct Case {
  Collective collective;
  int nranks;
  size_t count;
  DataType type;
  ReduceOp op;
  int root;
  bool inPlace;
};

std::string describe(const Case& c) {
  return toString(c.collective) + " n=" + std::to_string(c.nranks) +
         " count=" + std::to_string(c.count) + " type=" + std::to_string(static_cast<int>(c.type)) +
         " op=" + std::to_string(static_cast<int>(c.op)) + " root=" + std::to_string(c.root) +
         (c.inPlace ? " in place" : "");
}

/// Elements each rank sends and receives, in the C API's layouts.
size_t sendElements(const Case& c) {
  switch (c.collective) {
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Scatter:
      return c.count * c.nranks;
    default:
      return c.count;
  }
}
size_t recvElements(const Case& c) {
  switch (c.collective) {
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::Gather:
      return c.count * c.nranks;
    default:
      return c.count;
  }
}

/// Rank buffers: a separate send and recv, or one allocation in the API's in-place layout.
struct World {
  std::vector<std::vector<char>> memory;
  std::vector<DirectBuffers> buffers;
};

World makeWorld(const Case& c) {
  const size_t es = dataTypeSize(c.type);
  World w;
  for (int r = 0; r < c.nranks; ++r) {
    const size_t sendBytes = sendElements(c) * es;
    const size_t recvBytes = recvElements(c) * es;
    std::vector<char> values(sendBytes);
    for (size_t i = 0; i < sendElements(c); ++i) {
      storeValue(c.type, valueOf(c.op, r, i), values.data() + i * es);
    }
    if (!c.inPlace) {
      w.memory.push_back(values);
      w.memory.emplace_back(recvBytes + 1, '\x5a');
      continue;
    }
    // One buffer; where the send part sits inside the receive part or vice versa.
    std::vector<char> one(std::max(sendBytes, recvBytes), '\x5a');
    size_t sendAt = 0;
    if (c.collective == Collective::AllGather || c.collective == Collective::Gather) {
      sendAt = static_cast<size_t>(r) * c.count * es;
    }
    std::memcpy(one.data() + sendAt, values.data(), sendBytes);
    w.memory.push_back(std::move(one));
    w.memory.emplace_back();  // unused
  }
  for (int r = 0; r < c.nranks; ++r) {
    char* first = w.memory[2 * static_cast<size_t>(r)].data();
    if (!c.inPlace) {
      w.buffers.push_back({first, w.memory[2 * static_cast<size_t>(r) + 1].data()});
      continue;
    }
    const size_t block = c.count * es * static_cast<size_t>(r);
    switch (c.collective) {
      case Collective::AllGather:
      case Collective::Gather:
        w.buffers.push_back({first + block, first});
        break;
      case Collective::ReduceScatter:
      case Collective::Scatter:
        w.buffers.push_back({first, first + block});
        break;
      default:
        w.buffers.push_back({first, first});
    }
  }
  return w;
}

/// The expected receive buffer of `rank`, computed element by element.
std::vector<char> expected(const Case& c, int rank) {
  const size_t es = dataTypeSize(c.type);
  const ReduceFn reduce = reducerFor(c.type, c.op);
  std::vector<char> out(recvElements(c) * es);
  auto value = [&](int p, size_t i) {
    std::vector<char> v(es);
    storeValue(c.type, valueOf(c.op, p, i), v.data());
    return v;
  };
  auto reduced = [&](size_t i, char* dst) {
    std::memcpy(dst, value(0, i).data(), es);
    for (int p = 1; p < c.nranks; ++p) reduce(dst, dst, value(p, i).data(), 1);
    if (c.op == ReduceOp::Avg) finalizerFor(c.type, c.op)(dst, 1, c.nranks);
  };
  for (size_t i = 0; i < recvElements(c); ++i) {
    char* dst = out.data() + i * es;
    const int block = static_cast<int>(c.count == 0 ? 0 : i / c.count);
    const size_t within = c.count == 0 ? 0 : i % c.count;
    switch (c.collective) {
      case Collective::AllReduce:
      case Collective::Reduce:
        reduced(i, dst);
        break;
      case Collective::ReduceScatter:
        reduced(static_cast<size_t>(rank) * c.count + i, dst);
        break;
      case Collective::AllGather:
      case Collective::Gather:
        std::memcpy(dst, value(block, within).data(), es);
        break;
      case Collective::Broadcast:
        std::memcpy(dst, value(c.root, i).data(), es);
        break;
      case Collective::AllToAll:
        std::memcpy(dst, value(block, static_cast<size_t>(rank) * c.count + within).data(), es);
        break;
      case Collective::Scatter:
        std::memcpy(dst, value(c.root, static_cast<size_t>(rank) * c.count + i).data(), es);
        break;
      default:
        break;
    }
  }
  return out;
}

bool receives(const Case& c, int rank) {
  return !((c.collective == Collective::Reduce || c.collective == Collective::Gather) &&
           rank != c.root);
}

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
  std::vector<DirectPlan> plans;
  plans.reserve(static_cast<size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) {
    plans.push_back(directPlan(c.collective, c.count, c.type, c.op, c.root, r, w.buffers));
  }
  if (order == Order::kRankByRank) expectNoCrossRankHazards(plans, c);
  for (const DirectPlan& p : plans) {
    // The ranks meet between phases together or not at all.
    ASSERT_EQ(p.twoPhases(), plans[0].twoPhases());
    if (!p.twoPhases()) ASSERT_TRUE(p.phase[1].empty());
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
