// GradientSync's overlap worker: it sums what the ranks hand it, and a
// reduction that fails on the worker thread comes back to the rank's own thread
// as an exception from reduceGradients, never as a hang or a lost error.
#include "parallel/gradient_sync.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace loom::train {
namespace {

ParamStore storeOf(int elements) {
  ParamSpec spec;
  spec.name = "w";
  spec.cols = elements;
  return ParamStore({{spec}}, 0, 1, 2);
}

/// Sets an environment variable for the scope (read when a communicator is created).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(GradientSync, OverlappedBucketsHoldTheSumOfTheRanks) {
  constexpr int kElements = 1001;  // odd: the segment is padded to 1002
  std::vector<loom::Comm> comms = loom::Comm::initAll(2);
  std::vector<std::vector<float>> results(2);
  std::vector<std::thread> ranks;
  ranks.reserve(2);
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      CommClock clock;
      GroupComm dp(std::move(comms[r]), &clock);
      ParamStore store = storeOf(kElements);
      GradientSync sync(store, dp, 100, false, loomCompression{}, true);
      for (int i = 0; i < kElements; ++i) store.grads()[i] = static_cast<float>((r + 1) * i);
      sync.beginStep();
      sync.gradientsFinalFrom(500);  // the later buckets start while "backward" goes on
      sync.reduceGradients();
      results[r] = store.grads();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < kElements; ++i) {
      ASSERT_EQ(results[r][i], static_cast<float>(3 * i)) << "rank " << r << " element " << i;
    }
  }
}

TEST(GradientSync, WorkerFailureIsRaisedOnTheRanksThread) {
  const ScopedEnv timeout("LOOM_TIMEOUT", "1");
  std::vector<loom::Comm> comms = loom::Comm::initAll(2);
  CommClock clock;
  GroupComm dp(std::move(comms[0]), &clock);  // rank 1 never joins the reduction
  ParamStore store = storeOf(64);
  GradientSync sync(store, dp, 16, false, loomCompression{}, true);
  const auto start = std::chrono::steady_clock::now();
  sync.beginStep();
  sync.gradientsFinalFrom(0);
  try {
    sync.reduceGradients();
    FAIL() << "a reduction with a silent peer returned";
  } catch (const loom::Exception& e) {
    EXPECT_EQ(e.result(), loomRemoteError) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // The next step fails the same way instead of waiting on the lost one.
  sync.beginStep();
  EXPECT_THROW(sync.reduceGradients(), loom::Exception);
}

}  // namespace
}  // namespace loom::train
