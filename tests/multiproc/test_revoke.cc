// loomCommRevoke reaches every rank: ranks waiting in a collective that can
// never complete (the revoking rank never joins it) return loomRevoked within
// a second, naming the revoking rank, and every later call is refused at once.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "loom/loom.h"

namespace loomtest {
namespace {

class Revoke : public ::testing::TestWithParam<Launch> {};

TEST_P(Revoke, ReachesEveryRankWithinASecond) {
  RunOptions options;
  options.launch = GetParam();
  options.nranks = 3;
  options.env = {{"LOOM_TIMEOUT", "30"}};
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    std::vector<float> v(4096, 1.0f);
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the others are waiting
      if (loomCommRevoke(comm) != loomSuccess) out.error = "revoke failed";
    } else {
      const auto [rc, message, took] = timedAllReduce(comm, v);
      if (rc != loomRevoked) {
        out.error = "the waiting call returned " + std::to_string(rc) + ": " + message;
      } else if (message.find("rank 1 revoked") == std::string::npos) {
        out.error = "the revoking rank is not named: " + message;
      } else if (took > std::chrono::seconds(2)) {
        out.error = "the revoke took more than a second to arrive";
      }
    }
    // Every later call is refused at once, its buffer untouched.
    float x = 5.0f;
    const loomResult_t again = loomAllReduce(&x, &x, 1, loomFloat32, loomSum, comm, nullptr);
    if (out.error.empty() && (again != loomRevoked || x != 5.0f)) {
      out.error = "a call after the revoke returned " + std::to_string(again);
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Shm, Revoke, ::testing::Values(Launch::Threads, Launch::Processes),
                         [](const auto& info) { return std::string(launchName(info.param)); });

}  // namespace
}  // namespace loomtest
