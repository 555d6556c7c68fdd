// Tree search: double binary trees across hosts, chains inside hosts.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/error.h"
#include "search_fixtures.h"
#include "topology/tree_search.h"
#include "tuner/tree_shape.h"

namespace loom::topo {
namespace {

TreeSet treesFor(const Topology& t) {
  const RankGraph g(t, defaultRankNodes(t));
  return searchTrees(g, searchRings(g).front().order, tuner::doubleBinaryTreeShape());
}

TEST(TreeSearch, ValidForAnyHostCount) {
  for (int hosts : {1, 2, 3, 5, 8, 13}) {
    const Topology t = testing::smallCluster(hosts, 2);
    const TreeSet trees = treesFor(t);  // searchTrees checks itself too
    EXPECT_NO_THROW(checkTrees(trees, 2 * hosts));
    for (const auto& chains : trees.chains) {
      ASSERT_EQ(chains.size(), static_cast<size_t>(hosts));
      for (const auto& chain : chains) EXPECT_EQ(chain.size(), 2u);
    }
    for (int tree = 0; tree < 2; ++tree) {
      // Depth: the host tree's depth plus the last chain hop.
      EXPECT_LE(trees.depth(tree), 1 + 2 * static_cast<int>(std::ceil(std::log2(hosts + 1))));
    }
  }
}

// Tree 0's chains walk the ring forwards from where it enters each host,
// tree 1's backwards from where it leaves.
TEST(TreeSearch, ChainsFollowTheRingBothWays) {
  const Topology t = testing::smallCluster(2, 4);
  const RankGraph g(t, defaultRankNodes(t));
  const auto ring = searchRings(g).front().order;
  const TreeSet trees = searchTrees(g, ring, tuner::doubleBinaryTreeShape());
  auto after = [&](int rank, int tree) {
    const auto at = std::find(ring.begin(), ring.end(), rank);
    if (tree == 0) return at + 1 == ring.end() ? ring.front() : *(at + 1);
    return at == ring.begin() ? ring.back() : *(at - 1);
  };
  for (int tree = 0; tree < 2; ++tree) {
    for (const auto& chain : trees.chains[tree]) {
      ASSERT_EQ(chain.size(), 4u);
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        EXPECT_EQ(after(chain[i], tree), chain[i + 1]) << "tree " << tree;
      }
      // A head is where the ring crosses into (tree 0) or out of (tree 1) the host.
      const int outside = tree == 0 ? after(chain.front(), 1) : after(chain.front(), 0);
      EXPECT_NE(g.hostOf(outside), g.hostOf(chain.front())) << "tree " << tree;
    }
  }
}

TEST(TreeSearch, CheckCatchesBrokenTrees) {
  TreeSet trees = treesFor(testing::smallCluster(3, 2));
  TreeSet orphan = trees;
  orphan.rankTrees[0][1].parent = -1;
  EXPECT_THROW(checkTrees(orphan, 6), Error);
  TreeSet bothInterior = trees;
  bothInterior.hostTrees[1] = bothInterior.hostTrees[0];
  EXPECT_THROW(checkTrees(bothInterior, 6), Error);
  const Topology t = testing::smallCluster(1, 2);
  const RankGraph g(t, defaultRankNodes(t));
  EXPECT_THROW(searchTrees(g, {0, 0}, tuner::doubleBinaryTreeShape()), Error);
}

TEST(TreeSearch, ReferenceClusterTrees) {
  const std::string path = testing::referenceFile("cluster-16x-h100.xml");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing";
  const Topology t = loadTopologyFile(path);
  const TreeSet trees = treesFor(t);
  EXPECT_NO_THROW(checkTrees(trees, 128));
  // 16 hosts: host trees of depth 4 or so, plus a 7-hop chain.
  EXPECT_LE(trees.depth(0), 4 + 7);
  EXPECT_LE(trees.depth(1), 4 + 7);
}

// Eight NICs per host, one per GPU. The heads of a channel's two trees cross
// the network through two different NICs, and the trees of the eight ring
// channels use all eight, each carrying two trees' traffic (not all sixteen
// through one NIC, as when every tree started at the ring's entry rank).
TEST(TreeSearch, ReferenceClusterTreesSpreadOverEveryNic) {
  const Topology t = loadTopologyFile(testing::referenceFile("cluster-16x-h100.xml"));
  const RankGraph g(t, defaultRankNodes(t));
  const auto rings = searchRings(g);
  ASSERT_EQ(rings.size(), 8u);
  for (int host = 0; host < g.hostCount(); ++host) {
    std::map<int, int> treesPerNic;
    for (const Ring& ring : rings) {
      const TreeSet trees = searchTrees(g, ring.order, tuner::doubleBinaryTreeShape());
      const int heads[2] = {trees.chains[0][host].front(), trees.chains[1][host].front()};
      EXPECT_NE(g.nicOf(heads[0]), g.nicOf(heads[1])) << "host " << host;
      for (int head : heads) ++treesPerNic[g.nicOf(head)];
    }
    EXPECT_EQ(treesPerNic.size(), 8u) << "host " << host;
    for (const auto& [nic, count] : treesPerNic) EXPECT_EQ(count, 2) << "host " << host;
  }
}

}  // namespace
}  // namespace loom::topo
