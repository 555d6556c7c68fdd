// Ranks that disagree on a call, without LOOM_CHECK, over shared memory: every
// rank that reads a peer's round fails with loomInvalidUsage naming the peer's
// call and its own, and leaves its buffers untouched. Never success with wrong
// data, never a wait until LOOM_TIMEOUT.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace loomtest
