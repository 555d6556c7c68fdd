// A rank that arrives long after its peers gave up on a call (it was stopped,
// or stuck in user code past LOOM_TIMEOUT) learns within milliseconds that the
// call cannot complete, instead of waiting for its own deadline. The ring is
// forced: the direct algorithm's one-shot round lets a late rank finish alone
// from the inputs its peers left in shared memory (docs/reliability.md).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "loom/loom.h"

namespace loomtest {
namespace {

TEST(LateRank, LearnsAtOnceThatItsPeersGaveUp) {
  RunOptions options;
  options.launch = Launch::Processes;
  options.nranks = 3;
  options.env = {{"LOOM_TIMEOUT", "2"}, {"LOOM_ALGO", "ring"}};
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    std::vector<float> v(4096, 1.0f);
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    const auto [rc, message, took] = timedAllReduce(comm, v);
    if (rc != loomRemoteError) {
      out.error = "returned " + std::to_string(rc) + ": " + message;
    } else if (rank == 2) {
      if (took > std::chrono::milliseconds(1000)) out.error = "the late rank waited: " + message;
      if (message.find("already failed AllReduce #0") == std::string::npos) {
        out.error += "no word of the peers' failure: " + message;
      }
    } else {
      // Stay until the late rank has looked at this rank's status.
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace loomtest
