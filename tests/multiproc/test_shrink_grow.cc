// loomCommShrink: after a rank dies (SIGKILL) the survivors agree on who is
// out and go on in a new communicator with correct results; ranks named in an
// exclude list, ranks that die during the agreement and ranks that stay
// silent past the window are out; bad input is refused before anything is sent.
// loomCommGrow: new ranks join a live communicator, also back to full size
// after a shrink.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "loom/loom.h"

namespace loomtest {
namespace {

using Clock = std::chrono::steady_clock;

std::string lastError(loomComm_t comm) { return loomGetLastError(comm); }

/// Checks `comm` (shrunk or grown) has labels.size() ranks with this rank at
/// `expectedRank`, and that an all-reduce, an all-gather and a broadcast give
/// the results its ranks' labels (old ranks, or any distinct numbers) imply.
/// Returns an error text.
std::string checkCommunicator(loomComm_t comm, int expectedRank, const std::vector<int>& labels,
                              int myLabel) {
  const int n = static_cast<int>(labels.size());
  int count = 0;
  int rank = -1;
  if (loomCommCount(comm, &count) != loomSuccess || loomCommUserRank(comm, &rank) != loomSuccess) {
    return "cannot query the new communicator: " + lastError(comm);
  }
  if (count != n || rank != expectedRank) {
    return "new communicator is rank " + std::to_string(rank) + " of " + std::to_string(count) +
           ", expected " + std::to_string(expectedRank) + " of " + std::to_string(n);
  }
  // Odd count, values that carry the label: the sum says exactly who took part.
  std::vector<double> sum(1001);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = myLabel * 1000.0 + static_cast<double>(i);
  if (loomAllReduce(sum.data(), sum.data(), sum.size(), loomFloat64, loomSum, comm, nullptr) !=
      loomSuccess) {
    return "all-reduce on the new communicator: " + lastError(comm);
  }
  const double labelSum = std::accumulate(labels.begin(), labels.end(), 0.0);
  for (size_t i = 0; i < sum.size(); ++i) {
    if (sum[i] != labelSum * 1000.0 + n * static_cast<double>(i)) {
      return "all-reduce element " + std::to_string(i) + " is " + std::to_string(sum[i]);
    }
  }
  int32_t mine = myLabel;
  std::vector<int32_t> all(static_cast<size_t>(n), -1);
  if (loomAllGather(&mine, all.data(), 1, loomInt32, comm, nullptr) != loomSuccess) {
    return "all-gather on the new communicator: " + lastError(comm);
  }
  if (std::vector<int>(all.begin(), all.end()) != labels) return "all-gather: ranks out of order";
  int64_t value = myLabel == labels.back() ? 77 : 0;
  if (loomBroadcast(&value, &value, 1, loomInt64, n - 1, comm, nullptr) != loomSuccess ||
      value != 77) {
    return "broadcast from the last rank: " + lastError(comm);
  }
  return "";
}

/// Runs all-reduces until one fails (a peer died); returns the failing code.
loomResult_t allReduceUntilFailure(loomComm_t comm) {
  std::vector<float> v(4096, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    const loomResult_t rc =
        loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, comm, nullptr);
    if (rc != loomSuccess) return rc;
  }
  return loomSuccess;
}

struct ShrinkCase {
  Transport transport;
  int nranks;
  int victim;
};

class ShrinkAfterKill : public ::testing::TestWithParam<ShrinkCase> {};

TEST_P(ShrinkAfterKill, SurvivorsGoOnWithCorrectResults) {
  const ShrinkCase param = GetParam();
  RunOptions options;
  options.launch = Launch::Processes;
  options.transport = param.transport;
  options.nranks = param.nranks;
  std::vector<int> survivors;
  for (int r = 0; r < param.nranks; ++r) {
    if (r != param.victim) survivors.push_back(r);
  }
  const auto results = runRanks(options, [&](int rank, int, loomComm_t comm) {
    RankOutcome out;
    std::vector<float> v(4096, 1.0f);
    for (int i = 0; i < 3; ++i) {
      loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, comm, nullptr);
    }
    if (rank == param.victim) ::kill(::getpid(), SIGKILL);
    if (const loomResult_t rc = allReduceUntilFailure(comm); rc == loomSuccess) {
      out.error = "the collectives went on without the victim";
      return out;
    }
    const auto started = Clock::now();
    loomComm_t shrunk = nullptr;
    if (loomCommShrink(comm, nullptr, 0, &shrunk, LOOM_SHRINK_DEFAULT) != loomSuccess) {
      out.error = "shrink: " + lastError(comm);
      return out;
    }
    if (Clock::now() - started > std::chrono::seconds(5)) out.error = "the shrink took over 5 s; ";
    const int newRank = rank < param.victim ? rank : rank - 1;
    out.error += checkCommunicator(shrunk, newRank, survivors, rank);
    if (loomCommDestroy(shrunk) != loomSuccess) out.error += "destroying the shrunk communicator";
    return out;
  });
  for (int r = 0; r < param.nranks; ++r) {
    if (r == param.victim) {
      EXPECT_NE(results[r].death.find("signal 9"), std::string::npos) << results[r].describe(r);
    } else {
      EXPECT_TRUE(results[r].ok()) << results[r].describe(r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Killed, ShrinkAfterKill,
                         ::testing::Values(ShrinkCase{Transport::Shm, 4, 2},
                                           ShrinkCase{Transport::Shm, 3, 0},
                                           ShrinkCase{Transport::Tcp, 4, 3}),
                         [](const auto& info) {
                           return std::string(transportName(info.param.transport)) + "_" +
                                  std::to_string(info.param.nranks) + "ranks_victim" +
                                  std::to_string(info.param.victim);
                         });

// A second rank dies while the others agree: they do not wait for it.
TEST(Shrink, ARankThatDiesDuringTheAgreementIsOut) {
  RunOptions options;
  options.launch = Launch::Processes;
  options.nranks = 4;
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    if (rank == 3) ::kill(::getpid(), SIGKILL);
    allReduceUntilFailure(comm);
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others ask meanwhile
      ::kill(::getpid(), SIGKILL);
    }
    const auto started = Clock::now();
    loomComm_t shrunk = nullptr;
    // ABORT: the revoke it sends first must not disturb the agreement.
    if (loomCommShrink(comm, nullptr, 0, &shrunk, LOOM_SHRINK_ABORT) != loomSuccess) {
      out.error = "shrink: " + lastError(comm);
      return out;
    }
    // LOOM_TIMEOUT is 30 s: waiting for the dead rank would show.
    if (Clock::now() - started > std::chrono::seconds(5)) out.error = "the shrink took over 5 s; ";
    out.error += checkCommunicator(shrunk, rank, {0, 1}, rank);
    loomCommDestroy(shrunk);
    return out;
  });
  EXPECT_TRUE(results[0].ok()) << results[0].describe(0);
  EXPECT_TRUE(results[1].ok()) << results[1].describe(1);
  EXPECT_NE(results[2].death.find("signal 9"), std::string::npos) << results[2].describe(2);
  EXPECT_NE(results[3].death.find("signal 9"), std::string::npos) << results[3].describe(3);
}

// The NCCL form: every survivor names the rank to drop; that rank, if it asks
// anyway, learns it is out.
TEST(Shrink, ExcludedRanksAreOutAndToldSo) {
  RunOptions options;
  options.nranks = 4;
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    loomComm_t shrunk = nullptr;
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const loomResult_t rc = loomCommShrink(comm, nullptr, 0, &shrunk, LOOM_SHRINK_DEFAULT);
      if (rc != loomInvalidUsage || lastError(comm).find("ranks 1 are out") == std::string::npos) {
        out.error = "the excluded rank got " + std::to_string(rc) + ": " + lastError(comm);
      }
      return out;
    }
    const int exclude[] = {1};
    if (loomCommShrink(comm, exclude, 1, &shrunk, LOOM_SHRINK_DEFAULT) != loomSuccess) {
      out.error = "shrink: " + lastError(comm);
      return out;
    }
    out.error = checkCommunicator(shrunk, rank == 0 ? 0 : rank - 1, {0, 2, 3}, rank);
    loomCommDestroy(shrunk);
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// A rank silent for the whole window (one LOOM_TIMEOUT) is left out.
TEST(Shrink, ARankSilentPastTheWindowIsOut) {
  RunOptions options;
  options.nranks = 3;
  options.env = {{"LOOM_TIMEOUT", "1"}};
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    loomComm_t shrunk = nullptr;
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      if (loomCommShrink(comm, nullptr, 0, &shrunk, LOOM_SHRINK_DEFAULT) != loomInvalidUsage) {
        out.error = "the silent rank was let in: " + lastError(comm);
      }
      return out;
    }
    const auto started = Clock::now();
    if (loomCommShrink(comm, nullptr, 0, &shrunk, LOOM_SHRINK_DEFAULT) != loomSuccess) {
      out.error = "shrink: " + lastError(comm);
      return out;
    }
    const auto took = Clock::now() - started;
    if (took < std::chrono::milliseconds(900) || took > std::chrono::milliseconds(2200)) {
      out.error = "the window was not one LOOM_TIMEOUT; ";
    }
    out.error += checkCommunicator(shrunk, rank, {0, 1}, rank);
    loomCommDestroy(shrunk);
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// Rank 0 hosts the rendezvous. Its receive from rank 1 fails (rank 1 stalls
// past the deadline), so it destroys the communicator and its process ends,
// taking the server along. Rank 2 took no part in that call and rank 1 never
// disconnected: rank 2's split fails saying rank 0 left and what rank 0's call
// met, so the first cause (rank 1) reaches a rank that saw none of it.
TEST(HostRankLeft, ASurvivorHearsWhatItsCallMet) {
  RunOptions options;
  options.launch = Launch::Processes;
  options.nranks = 3;
  options.env = {{"LOOM_TIMEOUT", "2"}};
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(6));  // past rank 2's split
      return out;
    }
    if (rank == 0) {
      float value = 0;
      const loomResult_t rc = loomRecv(&value, 1, loomFloat32, 1, comm, nullptr);
      if (rc == loomSuccess) out.error = "the receive from the stalled rank succeeded";
      return out;  // the harness destroys the communicator; the process ends
    }
    // Long enough for rank 0 to time out (2 s), leave and exit.
    std::this_thread::sleep_for(std::chrono::seconds(4));
    loomComm_t split = nullptr;
    const loomResult_t rc = loomCommSplit(comm, 0, rank, &split);
    const std::string error = lastError(comm);
    // The server, in rank 0's process, answers the round itself if it is
    // still up ("rank 0 (pid ...) already left"), else the client says the
    // server is gone ("rank 0 left this communicator"); both pass on why.
    if (rc != loomRemoteError || error.find("rank 0 ") == std::string::npos ||
        error.find(" left ") == std::string::npos ||
        error.find("after its call failed (") == std::string::npos ||
        error.find("rank 1") == std::string::npos) {
      out.error = "the split returned " + std::to_string(rc) + ": " + error;
    }
    if (rc == loomSuccess) loomCommDestroy(split);
    return out;
  });
  EXPECT_TRUE(results[0].reported) << results[0].describe(0);
  EXPECT_TRUE(results[0].outcome.error.empty()) << results[0].describe(0);
  EXPECT_TRUE(results[2].reported && results[2].outcome.error.empty()) << results[2].describe(2);
  // Rank 1 only has to finish: its communicator's server is gone when it
  // destroys it.
  EXPECT_TRUE(results[1].reported) << results[1].describe(1);
}

TEST(Shrink, BadInputIsRefusedBeforeAnythingIsSent) {
  RunOptions options;
  options.nranks = 2;
  const auto results = runRanks(options, [](int rank, int nranks, loomComm_t comm) {
    RankOutcome out;
    loomComm_t shrunk = nullptr;
    const int self[] = {rank};
    const int outside[] = {nranks};
    const int negative[] = {-1};
    const int twice[] = {1 - rank, 1 - rank};
    const struct {
      const char* what;
      loomResult_t rc;
      loomResult_t expected;
    } cases[] = {
        {"flags 2", loomCommShrink(comm, nullptr, 0, &shrunk, 2), loomInvalidArgument},
        {"itself", loomCommShrink(comm, self, 1, &shrunk, 0), loomInvalidArgument},
        {"rank nranks", loomCommShrink(comm, outside, 1, &shrunk, 0), loomInvalidArgument},
        {"rank -1", loomCommShrink(comm, negative, 1, &shrunk, 0), loomInvalidArgument},
        {"twice", loomCommShrink(comm, twice, 2, &shrunk, 0), loomInvalidArgument},
        {"count -1", loomCommShrink(comm, self, -1, &shrunk, 0), loomInvalidArgument},
        {"NULL list", loomCommShrink(comm, nullptr, 1, &shrunk, 0), loomInvalidArgument},
        {"NULL newcomm", loomCommShrink(comm, nullptr, 0, nullptr, 0), loomInvalidArgument},
        {"NULL comm", loomCommShrink(nullptr, nullptr, 0, &shrunk, 0), loomInvalidArgument},
    };
    for (const auto& c : cases) {
      if (c.rc != c.expected) out.error += std::string(c.what) + " gave " + std::to_string(c.rc);
    }
    if (shrunk != nullptr) out.error += "; newcomm was written";
    // The communicator is untouched: it still works.
    std::vector<float> v(3, 1.0f);
    if (loomAllReduce(v.data(), v.data(), 3, loomFloat32, loomSum, comm, nullptr) != loomSuccess ||
        v[2] != 2.0f) {
      out.error += "; the communicator no longer works";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

/// A new rank, as a thread: joins the grown communicator through `id` and
/// checks it like the members do.
std::string growAsNewRank(const loomUniqueId& id, int nranks, int rank,
                          const std::vector<int>& labels) {
  loomComm_t grown = nullptr;
  if (loomCommGrow(nullptr, nranks, &id, rank, &grown) != loomSuccess) {
    return "new rank " + std::to_string(rank) + ": " + lastError(nullptr);
  }
  std::string error = checkCommunicator(grown, rank, labels, labels[rank]);
  loomCommDestroy(grown);
  return error;
}

TEST(Grow, NewRanksJoinAndMembersKeepTheirRanks) {
  RunOptions options;
  options.nranks = 2;
  const std::vector<int> labels = {0, 1, 2, 3};
  const auto results = runRanks(options, [&](int rank, int, loomComm_t comm) {
    RankOutcome out;
    std::vector<std::string> joined(2);
    std::vector<std::thread> newcomers;
    if (rank == 0) {
      loomUniqueId id;
      if (loomCommGetUniqueId(comm, &id) != loomSuccess) {
        out.error = "loomCommGetUniqueId: " + lastError(comm);
        return out;
      }
      for (int r : {2, 3}) {
        newcomers.emplace_back([&, r, id] { joined[r - 2] = growAsNewRank(id, 4, r, labels); });
      }
    }
    loomComm_t grown = nullptr;
    if (loomCommGrow(comm, 4, nullptr, -1, &grown) != loomSuccess) {
      out.error = "grow: " + lastError(comm);
    } else {
      out.error = checkCommunicator(grown, rank, labels, rank);
      loomCommDestroy(grown);
    }
    for (auto& t : newcomers) t.join();
    for (const std::string& e : joined) out.error += e;
    // The communicator it grew from still works.
    std::vector<float> v(5, 1.0f);
    if (loomAllReduce(v.data(), v.data(), 5, loomFloat32, loomSum, comm, nullptr) != loomSuccess ||
        v[4] != 2.0f) {
      out.error += "; the parent no longer works";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// A rank dies; the survivors shrink, then grow back to full size with a
// replacement (a thread of rank 0's process here) and every result is right.
TEST(Grow, BackToFullSizeAfterAShrink) {
  RunOptions options;
  options.launch = Launch::Processes;
  options.nranks = 3;
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    if (rank == 2) ::kill(::getpid(), SIGKILL);
    allReduceUntilFailure(comm);
    loomComm_t shrunk = nullptr;
    if (loomCommShrink(comm, nullptr, 0, &shrunk, LOOM_SHRINK_DEFAULT) != loomSuccess) {
      out.error = "shrink: " + lastError(comm);
      return out;
    }
    // The replacement's label is 7: sums and orders show it took rank 2.
    const std::vector<int> labels = {0, 1, 7};
    std::string replacement;
    std::thread newcomer;
    if (rank == 0) {
      loomUniqueId id;
      if (loomCommGetUniqueId(shrunk, &id) != loomSuccess) {
        out.error = "loomCommGetUniqueId: " + lastError(shrunk);
        loomCommDestroy(shrunk);
        return out;
      }
      newcomer = std::thread([&, id] { replacement = growAsNewRank(id, 3, 2, labels); });
    }
    loomComm_t full = nullptr;
    if (loomCommGrow(shrunk, 3, nullptr, -1, &full) != loomSuccess) {
      out.error = "grow: " + lastError(shrunk);
    } else {
      out.error = checkCommunicator(full, rank, labels, rank);
      loomCommDestroy(full);
    }
    if (newcomer.joinable()) newcomer.join();
    out.error += replacement;
    loomCommDestroy(shrunk);
    return out;
  });
  EXPECT_TRUE(results[0].ok()) << results[0].describe(0);
  EXPECT_TRUE(results[1].ok()) << results[1].describe(1);
  EXPECT_NE(results[2].death.find("signal 9"), std::string::npos) << results[2].describe(2);
}

TEST(Grow, BadInputIsRefused) {
  RunOptions options;
  options.nranks = 2;
  const auto results = runRanks(options, [](int rank, int, loomComm_t comm) {
    RankOutcome out;
    loomComm_t grown = nullptr;
    loomUniqueId id;
    const auto expect = [&](const char* what, loomResult_t rc, loomResult_t expected) {
      if (rc != expected) out.error += std::string(what) + " gave " + std::to_string(rc) + "; ";
    };
    expect("grow to the same size", loomCommGrow(comm, 2, nullptr, -1, &grown),
           loomInvalidArgument);
    expect("NULL newcomm", loomCommGrow(comm, 3, nullptr, -1, nullptr), loomInvalidArgument);
    expect("new rank without an id", loomCommGrow(nullptr, 3, nullptr, 2, &grown),
           loomInvalidArgument);
    expect("NULL id out", loomCommGetUniqueId(comm, nullptr), loomInvalidArgument);
    expect("NULL comm", loomCommGetUniqueId(nullptr, &id), loomInvalidArgument);
    // Collective: nobody started the new ranks' rendezvous, so every member refuses.
    expect("grow without an id", loomCommGrow(comm, 3, nullptr, -1, &grown), loomInvalidUsage);
    if (rank == 0) {
      expect("first id", loomCommGetUniqueId(comm, &id), loomSuccess);
      expect("second id", loomCommGetUniqueId(comm, &id), loomInvalidUsage);
      loomUniqueId garbage{};
      expect("a new rank with a malformed id", loomCommGrow(nullptr, 3, &garbage, 2, &grown),
             loomInvalidArgument);
      expect("a new rank outside nranks", loomCommGrow(nullptr, 3, &id, 3, &grown),
             loomInvalidArgument);
    }
    if (grown != nullptr) out.error += "newcomm was written";
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace loomtest
