// Plans as data: chunking, the double binary tree, request validation, and
// static properties of every algorithm's plans (matched traffic, no redundant
// copies in place). Execution is checked in test_simulator.cc.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "collectives/plan.h"
#include "core/error.h"

namespace loom {
namespace {

struct Supported {
  Collective collective;
  Algorithm algorithm;
};

const std::vector<Supported>& supportedPairs() {
  static const std::vector<Supported> pairs = {
      {Collective::AllReduce, Algorithm::Ring},     {Collective::AllGather, Algorithm::Ring},
      {Collective::ReduceScatter, Algorithm::Ring}, {Collective::Broadcast, Algorithm::Ring},
      {Collective::Reduce, Algorithm::Ring},        {Collective::AllReduce, Algorithm::Tree},
      {Collective::Broadcast, Algorithm::Tree},     {Collective::Reduce, Algorithm::Tree},
      {Collective::AllToAll, Algorithm::Pairwise},  {Collective::Send, Algorithm::Pairwise},
      {Collective::Recv, Algorithm::Pairwise},      {Collective::Gather, Algorithm::Star},
      {Collective::Scatter, Algorithm::Star},
  };
  return pairs;
}

const Collective kCollectives[] = {
    Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
    Collective::Reduce,    Collective::AllToAll,  Collective::Gather,        Collective::Scatter,
    Collective::Send,      Collective::Recv};
const Algorithm kAlgorithms[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::Direct,
                                 Algorithm::Pairwise, Algorithm::Star};

PlanRequest request(Collective c, Algorithm a, int rank, int nranks, size_t count, int root = 0,
                    bool inPlace = false) {
  PlanRequest req;
  req.collective = c;
  req.algorithm = a;
  req.rank = rank;
  req.nranks = nranks;
  req.count = count;
  req.root = root;
  req.inPlace = inPlace;
  return req;
}

TEST(Chunking, PiecesTileTheRangeLargerFirst) {
  for (size_t count : {0, 1, 5, 7, 8, 97, 1000}) {
    for (int parts = 1; parts <= 12; ++parts) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        EXPECT_EQ(chunkOffset(count, parts, i), next) << count << "/" << parts << " #" << i;
        const size_t size = chunkSize(count, parts, i);
        EXPECT_TRUE(size == count / parts || size == count / parts + 1);
        if (i > 0) {
          EXPECT_LE(size, chunkSize(count, parts, i - 1));
        }
        next += size;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(Chunking, RejectsMissingPieces) {
  EXPECT_THROW(chunkSize(10, 0, 0), Error);
  EXPECT_THROW(chunkOffset(10, 3, 3), Error);
  EXPECT_THROW(chunkOffset(10, 3, -1), Error);
}

TEST(Algorithms, SupportTable) {
  for (Collective c : kCollectives) {
    for (Algorithm a : kAlgorithms) {
      bool expected = false;
      for (const Supported& s : supportedPairs()) expected |= s.collective == c && s.algorithm == a;
      EXPECT_EQ(algorithmSupports(a, c), expected) << toString(a) << " " << toString(c);
      if (!expected) {
        try {
          makePlan(request(c, a, 0, 4, 10));
          ADD_FAILURE() << "accepted " << toString(a) << " " << toString(c);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
          EXPECT_NE(std::string(e.what()).find(toString(a)), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find(toString(c)), std::string::npos) << e.what();
        }
      }
    }
  }
}

TEST(Algorithms, RejectsBadRequests) {
  auto expectInvalid = [](const PlanRequest& req, const std::string& needle) {
    try {
      makePlan(req);
      ADD_FAILURE() << "accepted a bad request";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expectInvalid(request(Collective::AllReduce, Algorithm::Ring, 0, 0, 8), "nranks 0");
  expectInvalid(request(Collective::AllReduce, Algorithm::Ring, 0, -3, 8), "nranks -3");
  expectInvalid(request(Collective::AllReduce, Algorithm::Ring, 4, 4, 8), "rank 4");
  expectInvalid(request(Collective::AllReduce, Algorithm::Tree, -1, 4, 8), "rank -1");
  expectInvalid(request(Collective::Broadcast, Algorithm::Ring, 0, 4, 8, 4), "4");
  expectInvalid(request(Collective::Reduce, Algorithm::Tree, 0, 4, 8, -1), "-1");
  expectInvalid(request(Collective::Send, Algorithm::Pairwise, 0, 4, 8, 9), "9");
  expectInvalid(request(Collective::AllGather, Algorithm::Ring, 0, 4, SIZE_MAX / 2), "overflow");
}

TEST(Plan, ToStringNamesKindsPeersAndBuffers) {
  EXPECT_EQ(toString(Collective::ReduceScatter), "ReduceScatter");
  EXPECT_EQ(toString(Algorithm::Tree), "Tree");
  EXPECT_EQ(toString(StepKind::RecvReduceCopySend), "RecvReduceCopySend");
  const RankPlan plan = makePlan(request(Collective::AllReduce, Algorithm::Ring, 1, 3, 9));
  const std::string text = toString(plan);
  EXPECT_NE(text.find("stream 0"), std::string::npos) << text;
  EXPECT_NE(text.find("RecvReduceCopySend(from 0, to 2, src in[3], dst out[3], count 3, finalize)"),
            std::string::npos)
      << text;
}

TEST(Plan, BufferSizesFollowTheCApi) {
  const int n = 4;
  const size_t c = 10;
  using T = std::tuple<Collective, size_t, size_t, size_t, size_t>;  // in/out at root, non-root
  for (auto [coll, inRoot, outRoot, inOther, outOther] : {
           T{Collective::AllReduce, c, c, c, c},
           T{Collective::AllGather, c, n * c, c, n * c},
           T{Collective::ReduceScatter, n * c, c, n * c, c},
           T{Collective::Broadcast, c, c, 0, c},
           T{Collective::Reduce, c, c, c, 0},
           T{Collective::AllToAll, n * c, n * c, n * c, n * c},
           T{Collective::Gather, c, n * c, c, 0},
           T{Collective::Scatter, n * c, c, 0, c},
           T{Collective::Send, c, 0, c, 0},
           T{Collective::Recv, 0, c, 0, c},
       }) {
    EXPECT_EQ(inputElements(coll, c, n, 2, 2), inRoot) << toString(coll);
    EXPECT_EQ(outputElements(coll, c, n, 2, 2), outRoot) << toString(coll);
    EXPECT_EQ(inputElements(coll, c, n, 1, 2), inOther) << toString(coll);
    EXPECT_EQ(outputElements(coll, c, n, 1, 2), outOther) << toString(coll);
  }
}

// Checks one tree (parent/children of every rank) is a rooted spanning tree
// with consistent links, and returns each rank's number of children.
std::vector<int> checkTree(const std::vector<TreeLinks>& links, int expectedRoot) {
  const int n = static_cast<int>(links.size());
  std::vector<int> children(n, 0);
  int roots = 0;
  int edges = 0;
  for (int r = 0; r < n; ++r) {
    if (links[r].parent < 0) {
      ++roots;
      if (expectedRoot >= 0) {
        EXPECT_EQ(r, expectedRoot);
      }
    } else {
      ++edges;
      const TreeLinks& p = links[links[r].parent];
      EXPECT_TRUE(p.children[0] == r || p.children[1] == r) << "rank " << r << " of " << n;
    }
    for (int c : links[r].children) {
      if (c < 0) continue;
      EXPECT_GE(c, 0);
      EXPECT_LT(c, n);
      EXPECT_EQ(links[c].parent, r) << "rank " << r << " of " << n;
      ++children[r];
    }
    EXPECT_NE(links[r].children[0], r);
  }
  EXPECT_EQ(roots, 1) << n;
  EXPECT_EQ(edges, n - 1) << n;
  // Acyclic and connected: every rank reaches the root within n hops.
  for (int r = 0; r < n; ++r) {
    int at = r;
    int hops = 0;
    while (links[at].parent >= 0 && hops <= n) {
      at = links[at].parent;
      ++hops;
    }
    EXPECT_LE(hops, n - 1) << "cycle from rank " << r << " of " << n;
  }
  return children;
}

int depthOf(const std::vector<TreeLinks>& links) {
  int deepest = 0;
  for (size_t r = 0; r < links.size(); ++r) {
    int depth = 0;
    for (int at = static_cast<int>(r); links[at].parent >= 0; at = links[at].parent) ++depth;
    deepest = std::max(deepest, depth);
  }
  return deepest;
}

TEST(DoubleBinaryTree, TwoValidTreesWithDisjointInteriors) {
  for (int n = 1; n <= 300; ++n) {
    std::vector<int> interior(n, 0);
    for (int t = 0; t < 2; ++t) {
      std::vector<TreeLinks> links;
      for (int r = 0; r < n; ++r) links.push_back(doubleBinaryTree(r, n, t));
      const std::vector<int> children = checkTree(links, -1);
      for (int r = 0; r < n; ++r) interior[r] += children[r] > 0 && links[r].parent >= 0;
      // In-order trees are balanced: depth at most floor(log2 n) + 1.
      int log2 = 0;
      while ((2 << log2) <= n) ++log2;
      EXPECT_LE(depthOf(links), log2 + 1) << n;
    }
    for (int r = 0; r < n; ++r) EXPECT_LE(interior[r], 1) << "rank " << r << " of " << n;
  }
}

TEST(DoubleBinaryTree, NoRankHasChildrenInBothTrees) {
  // Stronger than "interior": a root with children also forwards data.
  for (int n = 1; n <= 300; ++n) {
    for (int r = 0; r < n; ++r) {
      const TreeLinks a = doubleBinaryTree(r, n, 0);
      const TreeLinks b = doubleBinaryTree(r, n, 1);
      EXPECT_FALSE(a.children[0] >= 0 && b.children[0] >= 0) << "rank " << r << " of " << n;
    }
  }
}

TEST(DoubleBinaryTree, RejectsBadArguments) {
  EXPECT_THROW(doubleBinaryTree(0, 0, 0), Error);
  EXPECT_THROW(doubleBinaryTree(3, 3, 0), Error);
  EXPECT_THROW(doubleBinaryTree(0, 3, 2), Error);
}

TEST(DoubleBinaryTree, RootedTreesHangBelowTheRoot) {
  for (int n = 1; n <= 70; ++n) {
    for (int root : {0, n / 2, n - 1}) {
      std::vector<int> interior(n, 0);
      for (int t = 0; t < 2; ++t) {
        std::vector<TreeLinks> links;
        for (int r = 0; r < n; ++r) links.push_back(detail::rootedDoubleBinaryTree(r, n, root, t));
        const std::vector<int> children = checkTree(links, root);
        EXPECT_LE(children[root], 1);
        for (int r = 0; r < n; ++r) interior[r] += children[r] > 0 && r != root;
      }
      for (int r = 0; r < n; ++r) EXPECT_LE(interior[r], 1) << r << " of " << n << " root " << root;
    }
  }
}

// Every (from, to) pair must carry the same elements, in the same message
// sizes and order, as seen by sender and receiver.
TEST(Plans, SendsMatchReceives) {
  for (const Supported& s : supportedPairs()) {
    if (s.collective == Collective::Send || s.collective == Collective::Recv) continue;
    for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 17}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t(n + 1), size_t{97}}) {
        for (int root : {0, n - 1}) {
          std::map<std::pair<int, int>, std::vector<size_t>> sent, received;
          for (int r = 0; r < n; ++r) {
            const RankPlan plan = makePlan(request(s.collective, s.algorithm, r, n, count, root));
            for (const auto& stream : plan.streams) {
              for (const Step& step : stream) {
                EXPECT_GT(step.count, 0u) << "empty step kept";
                const bool sends = step.kind == StepKind::Send ||
                                   step.kind == StepKind::RecvReduceSend ||
                                   step.kind == StepKind::RecvReduceCopySend ||
                                   step.kind == StepKind::RecvCopySend;
                const bool receives = step.kind != StepKind::Send && step.kind != StepKind::Copy;
                if (sends) sent[{r, step.sendPeer}].push_back(step.count);
                if (receives) received[{step.recvPeer, r}].push_back(step.count);
              }
            }
          }
          // Totals per link (order is checked by the simulator, per slice).
          auto total = [](const std::vector<size_t>& v) {
            size_t t = 0;
            for (size_t x : v) t += x;
            return t;
          };
          std::set<std::pair<int, int>> keys;
          for (auto& [k, v] : sent) keys.insert(k);
          for (auto& [k, v] : received) keys.insert(k);
          for (const auto& k : keys) {
            EXPECT_EQ(total(sent[k]), total(received[k]))
                << toString(s.algorithm) << " " << toString(s.collective) << " n=" << n << " link "
                << k.first << "->" << k.second;
          }
        }
      }
    }
  }
}

TEST(Plans, InPlaceHasNoCopies) {
  for (const Supported& s : supportedPairs()) {
    for (int n : {1, 2, 3, 8, 9}) {
      for (int r = 0; r < n; ++r) {
        const RankPlan plan = makePlan(request(s.collective, s.algorithm, r, n, 50, n - 1, true));
        for (const auto& stream : plan.streams) {
          for (const Step& step : stream) {
            EXPECT_NE(step.kind, StepKind::Copy)
                << toString(s.algorithm) << " " << toString(s.collective) << " " << toString(step);
          }
        }
      }
    }
  }
}

TEST(Plans, RingAllReduceShape) {
  for (int n : {2, 3, 8}) {
    const RankPlan plan = makePlan(request(Collective::AllReduce, Algorithm::Ring, 1, n, 100 * n));
    ASSERT_EQ(plan.streams.size(), 1u);
    const auto& s = plan.streams[0];
    ASSERT_EQ(s.size(), static_cast<size_t>(2 * n - 1));
    EXPECT_EQ(s.front().kind, StepKind::Send);
    EXPECT_EQ(s[n - 1].kind, StepKind::RecvReduceCopySend);
    EXPECT_TRUE(s[n - 1].finalize);
    EXPECT_EQ(s[n - 1].dst.offset, 100u);  // rank 1 owns chunk 1
    EXPECT_EQ(s.back().kind, StepKind::Recv);
    int finals = 0;
    for (const Step& step : s) finals += step.finalize;
    EXPECT_EQ(finals, 1);
    EXPECT_EQ(plan.scratchElements, 0u);
  }
}

TEST(Plans, TreeUsesTwoStreamsAndScratchOnlyForReduce) {
  for (int n : {2, 5, 16}) {
    size_t reduceScratch = 0;
    for (int r = 0; r < n; ++r) {
      const RankPlan all = makePlan(request(Collective::AllReduce, Algorithm::Tree, r, n, 64));
      EXPECT_EQ(all.streams.size(), 2u);
      EXPECT_EQ(all.scratchElements, 0u);
      const RankPlan bc = makePlan(request(Collective::Broadcast, Algorithm::Tree, r, n, 64));
      EXPECT_EQ(bc.scratchElements, 0u);
      const RankPlan red = makePlan(request(Collective::Reduce, Algorithm::Tree, r, n, 64));
      EXPECT_LE(red.scratchElements, 32u);
      if (r == 0) {
        EXPECT_EQ(red.scratchElements, 0u);  // the root reduces into its output
      }
      reduceScratch += red.scratchElements;
    }
    if (n >= 5) {
      EXPECT_GT(reduceScratch, 0u);
    }
  }
}

TEST(Plans, ZeroCountIsEmpty) {
  for (const Supported& s : supportedPairs()) {
    const RankPlan plan = makePlan(request(s.collective, s.algorithm, 1, 4, 0));
    EXPECT_TRUE(plan.streams.empty()) << toString(s.algorithm) << " " << toString(s.collective);
  }
}

}  // namespace
}  // namespace loom
