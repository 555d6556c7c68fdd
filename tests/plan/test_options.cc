// Every bad flag gets a specific Error(InvalidArgument).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "planner_options.h"

namespace loom::plan {
namespace {

RawOptions good() {
  RawOptions raw;
  raw.preset = "trainer-tiny";
  raw.tflops = 1;
  return raw;
}

void expectError(const RawOptions& raw, const std::string& words) {
  try {
    resolveOptions(raw);
    ADD_FAILURE() << "accepted; expected an error saying '" << words << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(PlanOptions, GoodOptionsResolve) {
  const PlannerOptions o = resolveOptions(good());
  EXPECT_EQ(o.model.layers, 2);
  EXPECT_EQ(o.model.numerics.name, "fp32");
  EXPECT_DOUBLE_EQ(o.hardware.tflops, 1.0);
}

TEST(PlanOptions, EachBadValueIsNamed) {
  RawOptions raw = good();
  raw.preset = "gpt5";
  expectError(raw, "--preset 'gpt5' is not known");
  raw = good();
  raw.preset.clear();
  expectError(raw, "give a model");
  raw = good();
  raw.heads = 3;
  expectError(raw, "not divisible by --heads 3");
  raw = good();
  raw.layers = -5;
  expectError(raw, "--layers must be >= 0");
  raw = good();
  raw.tflops = 0;
  expectError(raw, "compute rate");
  raw = good();
  raw.tflops = 0;
  raw.peakTflops = 312;
  raw.efficiency = 1.5;
  expectError(raw, "--efficiency in (0, 1]");
  raw = good();
  raw.memoryGb = 0;
  expectError(raw, "--memory-gb must be > 0");
  raw = good();
  raw.compressions = "none,gzip";
  expectError(raw, "'gzip': compressions are none, int8 and topk");
  raw = good();
  raw.topkFraction = 2;
  expectError(raw, "--topk-fraction");
  raw = good();
  raw.dpOverlap = -0.1;
  expectError(raw, "--dp-overlap");
  raw = good();
  raw.precision = "fp8";
  expectError(raw, "--precision 'fp8'");
  raw = good();
  raw.csv = raw.json = true;
  expectError(raw, "not both");
  raw = good();
  raw.maxMicroBatchSize = 0;
  expectError(raw, "--max-micro-batch");
}

TEST(PlanOptions, LayoutText) {
  const Layout l = parseLayout("dp=16,tp=8,pp=8,b=1,ckpt=1,zero=0,compress=int8");
  EXPECT_EQ(l.dp, 16);
  EXPECT_EQ(l.tp, 8);
  EXPECT_EQ(l.pp, 8);
  EXPECT_TRUE(l.checkpoint);
  EXPECT_FALSE(l.zero1);
  EXPECT_EQ(l.compression, Compression::Int8);
  RawOptions raw = good();
  raw.layout = "dp=2,xx=1";
  expectError(raw, "--layout key 'xx' is not known");
  raw.layout = "dp=two";
  expectError(raw, "--layout dp='two'");
  raw.layout = "dp";
  expectError(raw, "key=value");
  raw.layout = "ckpt=maybe";
  expectError(raw, "0/1 or on/off");
}

}  // namespace
}  // namespace loom::plan
