// Bad configurations are refused with one line naming the values, before any work.
#include <gtest/gtest.h>

#include <vector>

#include "app/command_line.h"
#include "app/train_options.h"
#include "parallel/compression_spec.h"

namespace loom::train {
namespace {

std::string errorFor(void (*change)(TrainOptions&), int world = 1) {
  TrainOptions o;
  change(o);
  return validateOptions(o, world);
}

TEST(TrainOptions, DefaultsAreValid) { EXPECT_EQ(validateOptions(TrainOptions{}, 1), ""); }

TEST(TrainOptions, GridMustMatchWorld) {
  const std::string e = errorFor([](TrainOptions& o) { o.grid = {2, 2, 1}; }, 8);
  EXPECT_NE(e.find("2 x 2 x 1 = 4 but the world has 8 ranks"), std::string::npos) << e;
}

TEST(TrainOptions, EachBadValueIsNamed) {
  struct Case {
    void (*change)(TrainOptions&);
    int world;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {[](TrainOptions& o) { o.grid.tp = 3; }, 3, "--heads 4 is not divisible by --tp 3"},
      {[](TrainOptions& o) { o.grid.pp = 4; }, 4, "--layers 2 < --pp 4"},
      {[](TrainOptions& o) { o.microBatches = 0; }, 1, "--micro-batches must be >= 1"},
      {[](TrainOptions& o) { o.microBatches = 3; }, 1, "do not split into --micro-batches 3"},
      {[](TrainOptions& o) { o.grid.dp = 3; }, 3,
       "--batch 16 is not a positive multiple of --dp 3"},
      {[](TrainOptions& o) { o.model.dModel = 66; }, 1, "--d-model 66 is not divisible"},
      {[](TrainOptions& o) { o.zero = 2; }, 1, "--zero must be 0 or 1"},
      {[](TrainOptions& o) { o.steps = 0; }, 1, "--steps must be >= 1"},
      {[](TrainOptions& o) { o.dataPath = "/nonexistent/corpus.txt"; }, 1,
       "cannot read data file '/nonexistent/corpus.txt'"},
  };
  for (const Case& c : cases) {
    const std::string e = errorFor(c.change, c.world);
    EXPECT_NE(e.find(c.expected), std::string::npos) << "got: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "not one line: " << e;
  }
}

ParseOutcome parse(std::vector<const char*> args, TrainOptions* o, std::string* error) {
  args.insert(args.begin(), "loom-train");
  return parseCommandLine(static_cast<int>(args.size()), args.data(), o, error);
}

TEST(CommandLine, ReadsFlags) {
  TrainOptions o;
  std::string error;
  ASSERT_EQ(parse({"--dp", "2", "--tp", "2", "--pp", "2", "--compress", "topk:0.01", "--zero", "1",
                   "--schedule", "afab", "--checkpoint-activations", "--micro-batches", "4"},
                  &o, &error),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.grid.size(), 8);
  EXPECT_EQ(o.compression.codec.kind, loomCompressTopK);
  EXPECT_DOUBLE_EQ(o.compression.codec.ratio, 0.01);
  EXPECT_EQ(o.zero, 1);
  EXPECT_EQ(o.schedule, ScheduleKind::kAllForwardAllBackward);
  EXPECT_TRUE(o.checkpointActivations);
  EXPECT_EQ(o.microBatches, 4);
}

TEST(CommandLine, RejectsUnknownFlagsAndBadValues) {
  const std::vector<std::vector<const char*>> bad = {{"--frobnicate"},
                                                     {"--dp", "two"},
                                                     {"--compress", "zip"},
                                                     {"--compress", "topk:2"},
                                                     {"--compress", "topk:0.01:warmup=-3"},
                                                     {"--compress", "topk:0.01:warmup=2.5"},
                                                     {"--compress", "topk:0.01:cooldown=5"},
                                                     {"--compress", "int8:block=100"},
                                                     {"--schedule", "zigzag"}};
  for (const auto& args : bad) {
    TrainOptions o;
    std::string error;
    EXPECT_EQ(parse(args, &o, &error), ParseOutcome::kError) << args[0];
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(CompressionSpec, ParsesEveryForm) {
  CompressionSpec c;
  std::string error;
  ASSERT_TRUE(parseCompression("int8:block=64", &c, &error)) << error;
  EXPECT_EQ(c.codec.kind, loomCompressInt8);
  EXPECT_EQ(c.codec.block, 64);
  EXPECT_EQ(compressionName(c, 100), "int8:block=64");
  ASSERT_TRUE(parseCompression("int8", &c, &error)) << error;
  EXPECT_EQ(c.codec.block, 64);
  ASSERT_TRUE(parseCompression("none", &c, &error));
  EXPECT_EQ(c.codec.kind, loomCompressNone);
  EXPECT_EQ(compressionName(c, 100), "none");
  ASSERT_TRUE(parseCompression("topk:0.01", &c, &error)) << error;
  EXPECT_EQ(c.codec.kind, loomCompressTopK);
  EXPECT_DOUBLE_EQ(c.codec.ratio, 0.01);
  EXPECT_EQ(c.sparsityWarmup, -1);
  EXPECT_EQ(compressionName(c, 200), "topk:0.01:warmup=50");  // a quarter of the run
  ASSERT_TRUE(parseCompression("topk:0.05:warmup=0", &c, &error)) << error;
  EXPECT_EQ(c.sparsityWarmup, 0);
  EXPECT_EQ(compressionName(c, 200), "topk:0.05:warmup=0");
}

TEST(CompressionSpec, SparsityWarmupFallsFromAllToTheRatio) {
  CompressionSpec c;
  std::string error;
  ASSERT_TRUE(parseCompression("topk:0.01:warmup=40", &c, &error)) << error;
  EXPECT_DOUBLE_EQ(keptFractionAt(c, 0, 1000), 1.0);
  EXPECT_NEAR(keptFractionAt(c, 20, 1000), 0.1, 1e-12);  // geometric midpoint
  for (int step = 1; step < 40; ++step) {
    EXPECT_LT(keptFractionAt(c, step, 1000), keptFractionAt(c, step - 1, 1000)) << step;
    EXPECT_GT(keptFractionAt(c, step, 1000), 0.01) << step;
  }
  EXPECT_DOUBLE_EQ(keptFractionAt(c, 40, 1000), 0.01);
  EXPECT_DOUBLE_EQ(keptFractionAt(c, 999, 1000), 0.01);
  // Without a warm-up the ratio holds throughout.
  ASSERT_TRUE(parseCompression("topk:0.01:warmup=0", &c, &error));
  EXPECT_DOUBLE_EQ(keptFractionAt(c, 0, 1000), 0.01);
  // The default lasts a quarter of the run.
  ASSERT_TRUE(parseCompression("topk:0.01", &c, &error));
  EXPECT_EQ(sparsityWarmupSteps(c, 200), 50);
  EXPECT_GT(keptFractionAt(c, 49, 200), 0.01);
  EXPECT_DOUBLE_EQ(keptFractionAt(c, 50, 200), 0.01);
  // Other codecs have no warm-up.
  ASSERT_TRUE(parseCompression("int8", &c, &error));
  EXPECT_EQ(sparsityWarmupSteps(c, 200), 0);
}

}  // namespace
}  // namespace loom::train
