// Tree search: double binary trees across hosts, chains inside hosts.
#include <gtest/gtest.h>

#include <filesystem>

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
    ASSERT_EQ(trees.chains.size(), static_cast<size_t>(hosts));
    for (const auto& chain : trees.chains) EXPECT_EQ(chain.size(), 2u);
    for (int tree = 0; tree < 2; ++tree) {
      // Depth: the host tree's depth plus the last chain hop.
      EXPECT_LE(trees.depth(tree), 1 + 2 * static_cast<int>(std::ceil(std::log2(hosts + 1))));
    }
  }
}

TEST(TreeSearch, ChainsFollowTheRing) {
  const Topology t = testing::smallCluster(2, 4);
  const RankGraph g(t, defaultRankNodes(t));
  const auto ring = searchRings(g).front().order;
  const TreeSet trees = searchTrees(g, ring, tuner::doubleBinaryTreeShape());
  for (const auto& chain : trees.chains) {
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      const auto at = std::find(ring.begin(), ring.end(), chain[i]);
      const auto next = at + 1 == ring.end() ? ring.begin() : at + 1;
      EXPECT_EQ(*next, chain[i + 1]);
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

}  // namespace
}  // namespace loom::topo
