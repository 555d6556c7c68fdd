// The meeting directory of growing back (app/grow_back.h): a waiting rank is
// seen, taken in by a plan that names its pid (and only such a plan), gives up
// when the members close the directory, and after its timeout.
#include "app/grow_back.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace loom::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class GrowChannelTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "loom-grow-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Waits until `channel` sees `n` waiting ranks (bounded).
  static bool seesWaiting(const GrowChannel& channel, size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (channel.waiting().size() == n) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }

  std::string dir_;
};

TEST_F(GrowChannelTest, APlanNamingThisPidTakesItIn) {
  const GrowChannel channel(dir_);
  EXPECT_TRUE(channel.enabled());
  EXPECT_TRUE(channel.waiting().empty());
  auto waiter = std::async(std::launch::async, [&] { return channel.awaitPlan(10s); });
  ASSERT_TRUE(seesWaiting(channel, 1));
  EXPECT_EQ(channel.waiting().front(), ::getpid());

  // A plan for somebody else is not this rank's.
  GrowPlan other;
  other.nranks = 5;
  other.firstNewRank = 4;
  other.pids = {::getpid() + 1};
  channel.publish(other);
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);

  GrowPlan plan;
  plan.nranks = 6;
  plan.firstNewRank = 4;
  plan.pids = {::getpid() + 7, ::getpid()};
  for (size_t i = 0; i < sizeof plan.id.internal; ++i) {
    plan.id.internal[i] = static_cast<char>(i * 37 + 1);
  }
  channel.publish(plan);
  const std::optional<GrowPlan> got = waiter.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->nranks, 6);
  EXPECT_EQ(got->firstNewRank, 4);
  EXPECT_EQ(got->pids, plan.pids);
  EXPECT_EQ(std::string(got->id.internal, sizeof got->id.internal),
            std::string(plan.id.internal, sizeof plan.id.internal));
  // Publishing took the chosen ranks off the waiting list.
  EXPECT_TRUE(channel.waiting().empty());
}

TEST_F(GrowChannelTest, ClosedMeansNobodyWillTakeItIn) {
  const GrowChannel channel(dir_);
  channel.close();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(channel.awaitPlan(10s).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_TRUE(channel.waiting().empty());
}

TEST_F(GrowChannelTest, GivesUpAfterItsTimeout) {
  const GrowChannel channel(dir_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(channel.awaitPlan(100ms), std::runtime_error);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_TRUE(channel.waiting().empty());
}

// A rank that died while it waited is not offered to a grow (which would
// wait for it in vain), and its file goes; the living ones keep their order.
TEST_F(GrowChannelTest, ADeadWaiterIsDroppedAndItsFileRemoved) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: its pid names no process
  const auto announce = [&](int pid) {
    std::FILE* file = std::fopen((dir_ + "/waiting." + std::to_string(pid)).c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fclose(file);
    std::this_thread::sleep_for(20ms);  // distinct times: the list is in order of arrival
  };
  announce(child);
  announce(::getpid());
  announce(::getppid());
  const GrowChannel channel(dir_);
  EXPECT_EQ(channel.waiting(), (std::vector<int>{::getpid(), ::getppid()}));
  EXPECT_FALSE(fs::exists(dir_ + "/waiting." + std::to_string(child)));
}

TEST(GrowBack, DirectoryAndReplacementComeFromTheLauncher) {
  ::unsetenv("LOOM_GROW_DIR");
  ::unsetenv("LOOM_REPLACEMENT");
  EXPECT_EQ(growDirectory(), "");
  EXPECT_FALSE(GrowChannel(growDirectory()).enabled());
  EXPECT_FALSE(startedAsReplacement());
  ::setenv("LOOM_GROW_DIR", "/tmp/x", 1);
  ::setenv("LOOM_REPLACEMENT", "1", 1);
  EXPECT_EQ(growDirectory(), "/tmp/x");
  EXPECT_TRUE(startedAsReplacement());
  ::unsetenv("LOOM_GROW_DIR");
  ::unsetenv("LOOM_REPLACEMENT");
}

}  // namespace
}  // namespace loom::train
