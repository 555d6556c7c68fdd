// Every tensor-parallel shard equals its slice of the single-rank model.
#include <gtest/gtest.h>

#include "model/gpt_stage.h"

namespace loom::train {
namespace {

TEST(ParamStore, TensorParallelShardsAreSlicesOfTheFullModel) {
  ModelConfig config;
  config.layers = 1;
  config.dModel = 16;
  config.heads = 4;
  config.seq = 4;
  const auto segments = GptStage::paramSegments(config, stageLayout(1, 0, 1));
  ParamStore full(segments, 0, 1, 1);
  full.initialize(11);
  constexpr int kTp = 2;
  for (int rank = 0; rank < kTp; ++rank) {
    ParamStore shard(segments, rank, kTp, 1);
    shard.initialize(11);
    for (int i = 0; i < static_cast<int>(shard.params().size()); ++i) {
      const Param& p = shard.param(i);
      const float* whole = full.value(full.index(p.spec.name));
      const float* mine = shard.value(i);
      for (int r = 0; r < p.rows; ++r) {
        for (int c = 0; c < p.cols; ++c) {
          ASSERT_EQ(mine[r * p.cols + c], whole[shard.globalIndex(p, r, c)])
              << p.spec.name << " rank " << rank << " (" << r << ", " << c << ")";
        }
      }
    }
  }
}

TEST(ParamStore, QkvShardHoldsWholeHeadsOfQKAndV) {
  ModelConfig config;
  config.layers = 1;
  config.dModel = 8;
  config.heads = 4;
  ParamStore shard(GptStage::paramSegments(config, stageLayout(1, 0, 1)), 1, 2, 1);
  const Param& qkv = shard.param(shard.index("h0.qkv.w"));
  ASSERT_EQ(qkv.cols, 12);
  // Rank 1 of 2 holds heads 2-3 (channels 4-7) of Q, of K and of V.
  EXPECT_EQ(shard.globalIndex(qkv, 0, 0), 4u);
  EXPECT_EQ(shard.globalIndex(qkv, 0, 4), 12u);
  EXPECT_EQ(shard.globalIndex(qkv, 0, 8), 20u);
}

TEST(ParamStore, SegmentsArePaddedToTheDataParallelSize) {
  ModelConfig config;
  ParamStore store(GptStage::paramSegments(config, stageLayout(2, 0, 1)), 0, 1, 3);
  for (const Range& s : store.segments()) EXPECT_EQ(s.size() % 3, 0u);
  EXPECT_EQ(store.segments().front().begin, 0u);
  EXPECT_EQ(store.param(0).spec.name, "wte");  // tied embedding alone in the first segment
}

}  // namespace
}  // namespace loom::train
