// Enumeration yields exactly the valid layouts, counted by hand.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "core/error.h"
#include "layout.h"
#include "model_shape.h"

namespace loom::plan {
namespace {

ModelShape smallModel() {
  ModelShape m;
  m.name = "small";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.seq = 16;
  m.vocab = 100;
  m.globalBatch = 8;
  return m;
}

TEST(PlanEnumeration, CountsEveryValidLayoutOnce) {
  EnumerationLimits limits;
  limits.maxMicroBatchSize = 2;
  limits.compressions = {Compression::None};
  limits.tryCheckpoint = false;
  const std::vector<Layout> layouts = enumerateLayouts(smallModel(), 4, limits);
  // dp x tp x pp = 4 with pp <= 2 layers: (1,2,2) (1,4,1) (2,1,2) (2,2,1) (4,1,1);
  // micro-batch 1 or 2 always divides 8 / dp; ZeRO-1 only with dp > 1:
  // 2 shapes x 2 sizes + 3 shapes x 2 sizes x 2 = 16.
  EXPECT_EQ(layouts.size(), 16u);
  std::set<std::tuple<int, int, int>> shapes;
  for (const Layout& l : layouts) shapes.insert({l.dp, l.tp, l.pp});
  const std::set<std::tuple<int, int, int>> expected = {
      {1, 2, 2}, {1, 4, 1}, {2, 1, 2}, {2, 2, 1}, {4, 1, 1}};
  EXPECT_EQ(shapes, expected);
}

TEST(PlanEnumeration, EveryLayoutSatisfiesTheRules) {
  ModelShape m = smallModel();
  m.heads = 6;
  m.hidden = 96;
  m.layers = 3;
  m.globalBatch = 12;
  for (const Layout& l : enumerateLayouts(m, 12, EnumerationLimits{})) {
    EXPECT_EQ(l.dp * l.tp * l.pp, 12) << l.label();
    EXPECT_EQ(6 % l.tp, 0) << l.label();
    EXPECT_LE(l.pp, 3) << l.label();
    EXPECT_EQ(12 % (l.dp * l.microBatchSize), 0) << l.label();
    EXPECT_TRUE(l.dp > 1 || (!l.zero1 && l.compression == Compression::None)) << l.label();
  }
}

TEST(PlanEnumeration, SaysWhyALayoutIsInvalid) {
  const ModelShape m = smallModel();
  EXPECT_NE(whyInvalid(m, 4, Layout{1, 3, 1}).find("is not the 4 GPUs"), std::string::npos);
  EXPECT_NE(whyInvalid(m, 8, Layout{1, 8, 1}).find("does not divide the 4 heads"),
            std::string::npos);
  EXPECT_NE(whyInvalid(m, 4, Layout{1, 1, 4}).find("exceeds the 2 layers"), std::string::npos);
  EXPECT_NE(whyInvalid(m, 4, Layout{4, 1, 1, 4}).find("batch 8 is not a multiple"),
            std::string::npos);
  Layout zeroAlone{1, 4, 1};
  zeroAlone.zero1 = true;
  EXPECT_NE(whyInvalid(m, 4, zeroAlone).find("need dp > 1"), std::string::npos);
  EXPECT_EQ(whyInvalid(m, 4, Layout{2, 2, 1, 2}), "");
}

TEST(PlanEnumeration, GroupedQueryAttentionLimitsTensorParallelism) {
  ModelShape m = smallModel();
  m.heads = 8;
  m.kvHeads = 2;
  m.globalBatch = 16;
  EXPECT_EQ(whyInvalid(m, 2, Layout{1, 2, 1}), "");
  EXPECT_NE(whyInvalid(m, 4, Layout{1, 4, 1}), "");  // 4 does not divide 2 KV heads
}

TEST(PlanEnumeration, NoValidLayoutIsAnError) {
  ModelShape m = smallModel();
  m.globalBatch = 1;
  // 3 GPUs: tp 3 does not divide 4 heads, pp 3 exceeds 2 layers, dp 3 exceeds batch 1.
  EXPECT_THROW(enumerateLayouts(m, 3, EnumerationLimits{}), Error);
}

}  // namespace
}  // namespace loom::plan
