// --save / --resume: a run resumed from a checkpoint continues bit for bit
// like the run that never stopped (parameters, optimizer moments and step are
// all restored; the data is a function of the step), for DP, DP x TP and
// ZeRO-1 across pipeline stages; a checkpoint of another configuration, a
// corrupt or truncated file and an incomplete directory are refused by name.
#include "app/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "thread_ranks.h"

namespace loom::train::testing {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "loom_ckpt.XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string errorOf(const TrainOptions& o) {
  try {
    trainOnThreads(o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

class Resume : public ::testing::TestWithParam<int> {};

TrainOptions configuration(int which) {
  switch (which) {
    case 0:
      return tinyOptions(2, 1, 1);
    case 1:
      return tinyOptions(2, 2, 1);
    default: {
      TrainOptions o = tinyOptions(2, 1, 2);
      o.zero = 1;
      return o;
    }
  }
}

TEST_P(Resume, ContinuesBitForBitLikeTheRunThatNeverStopped) {
  const TrainOptions base = configuration(GetParam());
  const std::vector<StepStats> straight = trainOnThreads(base);
  ASSERT_EQ(straight.size(), 10u);

  TempDir dir;
  TrainOptions saving = base;
  saving.savePath = dir.path();
  saving.saveEvery = 5;
  const std::vector<StepStats> saved = trainOnThreads(saving);
  ASSERT_EQ(saved.size(), 10u);
  EXPECT_EQ(saved.back().loss, straight.back().loss) << "saving changed the run";
  ASSERT_TRUE(fs::exists(dir.path() + "/step-000005/manifest.json"));
  ASSERT_TRUE(fs::exists(dir.path() + "/step-000010/rank-00001.ckpt"));

  TrainOptions resumed = base;
  resumed.resumePath = dir.path() + "/step-000005";
  const std::vector<StepStats> rest = trainOnThreads(resumed);
  ASSERT_EQ(rest.size(), 5u);
  for (size_t i = 0; i < rest.size(); ++i) {
    EXPECT_EQ(rest[i].step, straight[5 + i].step);
    EXPECT_EQ(rest[i].loss, straight[5 + i].loss) << "step " << 5 + i;
    EXPECT_EQ(rest[i].gradNorm, straight[5 + i].gradNorm) << "step " << 5 + i;
  }
  // The --save directory itself resumes from its latest checkpoint: step 10,
  // so a 12-step run trains steps 10 and 11 only.
  TrainOptions longer = base;
  longer.steps = 12;
  longer.resumePath = dir.path();
  const std::vector<StepStats> after = trainOnThreads(longer);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after.front().step, 10);
}

INSTANTIATE_TEST_SUITE_P(Grids, Resume, ::testing::Values(0, 1, 2), [](const auto& info) {
  return std::string(info.param == 0 ? "dp2" : info.param == 1 ? "dp2_tp2" : "dp2_pp2_zero1");
});

TEST(Resume, RefusesWhatDoesNotFit) {
  TempDir dir;
  TrainOptions o = tinyOptions(2, 1, 1);
  o.steps = 2;
  o.savePath = dir.path();
  trainOnThreads(o);
  const std::string checkpoint = dir.path() + "/step-000002";

  TrainOptions other = tinyOptions(2, 1, 1);
  other.resumePath = checkpoint;
  other.model.dModel = 64;
  EXPECT_NE(errorOf(other).find("saved by rank 0 of 2, dp 2 tp 1 pp 1, 2 layers of width 32"),
            std::string::npos)
      << errorOf(other);
  other = tinyOptions(2, 1, 1);
  other.resumePath = checkpoint;
  other.seed = 7;
  EXPECT_NE(errorOf(other).find("seed 1337; this run is"), std::string::npos);

  // One flipped byte, then a truncated file: the rank that reads it says so.
  const std::string file = checkpoint + "/" + rankFileName(1);
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x40;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << flipped;
  other = tinyOptions(2, 1, 1);
  other.resumePath = checkpoint;
  EXPECT_NE(errorOf(other).find("checksum mismatch"), std::string::npos) << errorOf(other);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, 100);
  EXPECT_NE(errorOf(other).find(rankFileName(1)), std::string::npos) << errorOf(other);

  // Without its manifest a directory is no checkpoint.
  fs::remove(checkpoint + "/manifest.json");
  EXPECT_NE(errorOf(other).find("no complete checkpoint"), std::string::npos) << errorOf(other);
}

}  // namespace
}  // namespace loom::train::testing
