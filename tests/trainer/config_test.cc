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
  EXPECT_EQ(o.compression.kind, loomCompressTopK);
  EXPECT_DOUBLE_EQ(o.compression.ratio, 0.01);
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
  loomCompression c{};
  std::string error;
  ASSERT_TRUE(parseCompression("int8:block=64", &c, &error)) << error;
  EXPECT_EQ(c.kind, loomCompressInt8);
  EXPECT_EQ(c.block, 64);
  EXPECT_EQ(compressionName(c), "int8:block=64");
  ASSERT_TRUE(parseCompression("none", &c, &error));
  EXPECT_EQ(c.kind, loomCompressNone);
}

}  // namespace
}  // namespace loom::train
