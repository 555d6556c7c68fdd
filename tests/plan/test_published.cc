// The planner against Narayanan et al., SC21 (docs/planner.md): per-GPU
// throughput of published runs within 20 %, and its own pick no worse than
// the published layout by its own model. DGX A100 nodes from
// tests/data/topo/dgx-a100-2node.xml; A100 peak 312 TFLOP/s at 55 % for all rows.
#include <gtest/gtest.h>

#include "comm_model.h"
#include "predictor.h"
#include "rank_placement.h"
#include "topology/topo_file.h"

namespace loom::plan {
namespace {

const std::string kDgxA100 = std::string(LOOM_TOPO_DATA_DIR) + "/dgx-a100-2node.xml";

Hardware a100() {
  Hardware hw;
  hw.tflops = 312 * 0.55;
  hw.memoryBytes = 80e9;
  return hw;
}

Layout published(int dp, int tp, int pp) {
  Layout l{dp, tp, pp, 1};
  l.checkpoint = true;
  return l;
}

TEST(PlanPublished, TensorGroupsStayInsideANodeAndDataGroupsCrossNodes) {
  const topo::Topology t = topo::loadTopologyFile(kDgxA100);
  RankPlacement placement(t, 1024);
  EXPECT_EQ(placement.gpusPerHost(), 8);
  const Layout l = published(16, 8, 8);
  EXPECT_EQ(placement.group(tpGroupOfRankZero(l)).hosts, 1);
  EXPECT_EQ(placement.group(dpGroupOfRankZero(l)).hosts, 16);
}

TEST(PlanPublished, Gpt3On1024GpusWithin20Percent) {
  const topo::Topology t = topo::loadTopologyFile(kDgxA100);
  RankPlacement placement(t, 1024);
  const ModelShape m = presetNamed("gpt3-175b");
  const Prediction p = predict(m, published(16, 8, 8), a100(), CommOptions{}, placement);
  EXPECT_TRUE(p.fits);
  EXPECT_NEAR(p.tflopsPerGpu, 138.0, 0.2 * 138.0);

  EnumerationLimits limits;
  limits.compressions = {Compression::None};
  limits.maxMicroBatchSize = 1;
  const auto ranked = rankLayouts(m, enumerateLayouts(m, 1024, limits), a100(), {}, placement);
  ASSERT_TRUE(ranked.front().fits);
  EXPECT_LE(ranked.front().stepSeconds, p.stepSeconds);
}

TEST(PlanPublished, OneTrillionOn3072GpusWithin20Percent) {
  const topo::Topology t = topo::loadTopologyFile(kDgxA100);
  RankPlacement placement(t, 3072);
  const Prediction p =
      predict(presetNamed("1t"), published(6, 8, 64), a100(), CommOptions{}, placement);
  EXPECT_TRUE(p.fits);
  EXPECT_NEAR(p.tflopsPerGpu, 163.0, 0.2 * 163.0);
}

}  // namespace
}  // namespace loom::plan
