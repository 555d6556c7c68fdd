// Ranks that disagree on a call, without LOOM_CHECK, over shared memory: every
// rank that reads a peer's round fails with loomInvalidUsage naming the peer's
// call and its own, and leaves its buffers untouched. Never success with wrong
// data, never a wait until LOOM_TIMEOUT.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "harness.h"
#include "loom/loom.h"

namespace loomtest {
namespace {

struct Call {
  size_t count;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;
};

struct MismatchCase {
  const char* name;
  std::vector<Call> calls;  // one per rank
  Launch launch = Launch::Threads;
};

std::string caseName(const ::testing::TestParamInfo<MismatchCase>& info) {
  return std::string(info.param.name) + "_" + launchName(info.param.launch);
}

class CallMismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(CallMismatch, EveryRankFailsNamingBothCalls) {
  const MismatchCase& c = GetParam();
  RunOptions options;
  options.launch = c.launch;
  options.nranks = static_cast<int>(c.calls.size());
  options.env = {{"LOOM_TIMEOUT", "20"}};
  const auto results = runRanks(options, [&](int rank, int, loomComm_t comm) {
    const Call call = c.calls[static_cast<size_t>(rank)];
    const size_t bytes = call.count * loomTypeSize(call.type);
    std::vector<unsigned char> send(bytes);
    std::vector<unsigned char> recv(bytes);
    for (size_t i = 0; i < bytes; ++i) {
      send[i] = static_cast<unsigned char>(i * 7 + rank);
      recv[i] = static_cast<unsigned char>(i * 13 + 2);
    }
    const auto sendBefore = send;
    const auto recvBefore = recv;
    RankOutcome out;
    const loomResult_t rc =
        loomAllReduce(send.data(), recv.data(), call.count, call.type, call.op, comm, nullptr);
    const std::string message = rc == loomSuccess ? "" : loomGetLastError(comm);
    if (rc != loomInvalidUsage) {
      out.error = "result " + std::to_string(rc) + " instead of loomInvalidUsage: " + message;
    } else if (message.find("every rank must make the same collective calls") ==
                   std::string::npos ||
               message.find("rank " + std::to_string(rank) + " called #0: AllReduce of " +
                            std::to_string(call.count)) == std::string::npos ||
               message.find(" elements") == std::string::npos) {
      out.error = "the message does not name both calls: " + message;
    } else if (send != sendBefore || recv != recvBefore) {
      out.error = "buffers were written by the failed call";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Shm, CallMismatch,
                         ::testing::Values(
                             // The reported case: one round each, reduced from the arenas.
                             MismatchCase{"counts", {{256}, {512}, {768}}},
                             MismatchCase{"counts", {{256}, {512}, {768}}, Launch::Processes},
                             // One rank in the cache-line path, the others in the arena path.
                             MismatchCase{"small_against_arena", {{2}, {1024}, {1024}}},
                             // Same bytes, different meaning: only the fingerprint can tell.
                             MismatchCase{"op", {{4}, {4, loomFloat32, loomMax}}},
                             MismatchCase{"type", {{64}, {64, loomInt32}, {64}}},
                             // Many rounds, or single-copy: the first round already differs.
                             MismatchCase{"large_counts", {{1 << 20}, {2 << 20}, {3 << 20}}}),
                         caseName);

// Over links (the ring and the tree, on shm links and tcp) messages carry a
// stamp of their call: equal sizes with another op or type fail too. A rank
// that found the mismatch names both calls; a local peer that only waits for
// it learns at once that the ranks disagree. Partial results may already be
// in the output buffers (a ring reduces as it goes), so only the result and
// the time are checked.
struct LinkCase {
  const char* name;
  std::vector<Call> calls;  // one per rank
  const char* algorithm;
  Transport transport = Transport::Shm;
};

class LinkCallMismatch : public ::testing::TestWithParam<LinkCase> {};

TEST_P(LinkCallMismatch, EveryRankFailsPromptly) {
  const LinkCase& c = GetParam();
  RunOptions options;
  options.launch = Launch::Processes;
  options.transport = c.transport;
  options.nranks = static_cast<int>(c.calls.size());
  options.env = {{"LOOM_TIMEOUT", "20"}, {"LOOM_ALGO", c.algorithm}};
  const auto results = runRanks(options, [&](int rank, int, loomComm_t comm) {
    const Call call = c.calls[static_cast<size_t>(rank)];
    std::vector<unsigned char> send(call.count * loomTypeSize(call.type), 1);
    std::vector<unsigned char> recv(send.size());
    RankOutcome out;
    const auto started = std::chrono::steady_clock::now();
    const loomResult_t rc =
        loomAllReduce(send.data(), recv.data(), call.count, call.type, call.op, comm, nullptr);
    const auto took = std::chrono::steady_clock::now() - started;
    const std::string message = rc == loomSuccess ? "" : loomGetLastError(comm);
    const bool namesBoth =
        message.find("rank " + std::to_string(rank) + " called #0: AllReduce") != std::string::npos;
    const bool toldByPeer = message.find("found ranks in different calls") != std::string::npos;
    if (rc != loomInvalidUsage) {
      out.error = "result " + std::to_string(rc) + " instead of loomInvalidUsage: " + message;
    } else if (!namesBoth && !toldByPeer) {
      out.error = "the message says neither call nor who found the mismatch: " + message;
    } else if (took > std::chrono::seconds(5)) {
      out.error = "the failure took more than 5 s (LOOM_TIMEOUT is 20)";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

std::string linkCaseName(const ::testing::TestParamInfo<LinkCase>& info) {
  return std::string(info.param.name) + "_" + info.param.algorithm + "_" +
         transportName(info.param.transport);
}

INSTANTIATE_TEST_SUITE_P(
    Links, LinkCallMismatch,
    ::testing::Values(
        LinkCase{"op", {{4096}, {4096, loomFloat32, loomMax}, {4096}}, "ring"},
        LinkCase{"type", {{4096}, {4096}, {4096, loomInt32}}, "ring"},
        LinkCase{"op", {{4096}, {4096}, {4096}, {4096, loomFloat32, loomProd}}, "tree"},
        LinkCase{"op", {{4096}, {4096, loomFloat32, loomMin}}, "ring", Transport::Tcp},
        LinkCase{"type", {{4096, loomInt32}, {4096}}, "ring", Transport::Tcp}),
    linkCaseName);

}  // namespace
}  // namespace loomtest
