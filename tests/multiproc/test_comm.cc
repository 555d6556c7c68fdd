// Communicator-level behaviour through the C API: split, queries, version,
// groups of collectives and of point-to-point calls, abort and dead peers.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "reference.h"

namespace loomtest {
namespace {

using Clock = std::chrono::steady_clock;

std::string err(const char* what, loomResult_t rc, loomComm_t comm) {
  return std::string(what) + " returned " + loomGetErrorString(rc) + ": " + loomGetLastError(comm) +
         "\n";
}

struct LaunchParam {
  Launch launch;
  Transport transport;
};

std::string launchParamName(const testing::TestParamInfo<LaunchParam>& info) {
  return std::string(launchName(info.param.launch)) + "_" + transportName(info.param.transport);
}

void PrintTo(const LaunchParam& p, std::ostream* os) {
  *os << launchName(p.launch) << " " << transportName(p.transport);
}

const LaunchParam kLaunches[] = {{Launch::Threads, Transport::Shm},
                                 {Launch::Threads, Transport::Tcp},
                                 {Launch::Processes, Transport::Shm},
                                 {Launch::Processes, Transport::Tcp}};

class CommTest : public testing::TestWithParam<LaunchParam> {
 protected:
  RunOptions options(int nranks) const {
    RunOptions o;
    o.launch = GetParam().launch;
    o.transport = GetParam().transport;
    o.nranks = nranks;
    return o;
  }
};

// Ranks 0..3 split by parity with keys reversing their order; rank 4 opts out.
// New ranks must follow the keys, and data must follow the new ranks.
TEST_P(CommTest, SplitByParityWithReversedKeys) {
  const auto results = runRanks(options(5), [](int rank, int n, loomComm_t comm) {
    RankOutcome out;
    const bool optOut = rank == n - 1;
    loomComm_t sub = reinterpret_cast<loomComm_t>(uintptr_t{0x1});
    loomResult_t rc = loomCommSplit(comm, optOut ? LOOM_SPLIT_NOCOLOR : rank % 2, -rank, &sub);
    if (rc != loomSuccess) return RankOutcome{err("loomCommSplit", rc, comm), ""};
    if (optOut) {
      if (sub != nullptr) out.error += "NOCOLOR rank got a communicator\n";
    } else if (sub == nullptr) {
      return RankOutcome{"split gave NULL to a coloured rank\n", ""};
    } else {
      // Group members in old-rank order: {0, 2} or {1, 3}; keys -rank reverse it.
      const int others = rank < 2 ? rank + 2 : rank - 2;
      const int expectRank = rank > others ? 0 : 1;
      int subCount = -1;
      int subRank = -1;
      loomCommCount(sub, &subCount);
      loomCommUserRank(sub, &subRank);
      if (subCount != 2) out.error += "sub count " + std::to_string(subCount) + "\n";
      if (subRank != expectRank) out.error += "sub rank " + std::to_string(subRank) + "\n";
      // Sum of (old rank + 1) over the group, and old ranks gathered in new order.
      std::vector<int32_t> v(33, rank + 1);
      rc = loomAllReduce(v.data(), v.data(), v.size(), loomInt32, loomSum, sub, nullptr);
      if (rc != loomSuccess) out.error += err("sub AllReduce", rc, sub);
      const int32_t expectSum = rank % 2 == 0 ? 1 + 3 : 2 + 4;
      if (v[32] != expectSum) out.error += "sub sum " + std::to_string(v[32]) + "\n";
      int32_t mine = rank;
      int32_t gathered[2] = {-1, -1};
      rc = loomAllGather(&mine, gathered, 1, loomInt32, sub, nullptr);
      if (rc != loomSuccess) out.error += err("sub AllGather", rc, sub);
      const int32_t hi = rank % 2 == 0 ? 2 : 3;
      if (gathered[0] != hi || gathered[1] != hi - 2) {
        out.error += "sub gather order " + std::to_string(gathered[0]) + "," +
                     std::to_string(gathered[1]) + "\n";
      }
      rc = loomCommDestroy(sub);
      if (rc != loomSuccess) out.error += err("sub destroy", rc, nullptr);
    }
    // The parent comm is unaffected by the split and its children.
    int32_t x = rank + 1;
    rc = loomAllReduce(&x, &x, 1, loomInt32, loomSum, comm, nullptr);
    if (rc != loomSuccess) out.error += err("parent AllReduce", rc, comm);
    if (x != n * (n + 1) / 2) out.error += "parent sum " + std::to_string(x) + "\n";
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// One colour, equal keys: the new comm keeps the old order (ties by old rank).
TEST_P(CommTest, SplitOneColorKeepsOrder) {
  const auto results = runRanks(options(3), [](int rank, int n, loomComm_t comm) {
    RankOutcome out;
    loomComm_t sub = nullptr;
    loomResult_t rc = loomCommSplit(comm, 7, 0, &sub);
    if (rc != loomSuccess || sub == nullptr) return RankOutcome{err("loomCommSplit", rc, comm), ""};
    int subCount = -1;
    int subRank = -1;
    loomCommCount(sub, &subCount);
    loomCommUserRank(sub, &subRank);
    if (subCount != n || subRank != rank) {
      out.error += "sub " + std::to_string(subRank) + " of " + std::to_string(subCount) + "\n";
    }
    double d = rank;
    rc = loomAllReduce(&d, &d, 1, loomFloat64, loomMax, sub, nullptr);
    if (rc != loomSuccess || d != n - 1) out.error += err("sub AllReduce", rc, sub);
    loomCommDestroy(sub);
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

TEST_P(CommTest, CountRankAndAsyncError) {
  const auto results = runRanks(options(4), [](int rank, int n, loomComm_t comm) {
    RankOutcome out;
    int count = -1;
    int me = -1;
    loomResult_t async = loomNumResults;
    if (loomCommCount(comm, &count) != loomSuccess || count != n) out.error += "count\n";
    if (loomCommUserRank(comm, &me) != loomSuccess || me != rank) out.error += "rank\n";
    if (loomCommGetAsyncError(comm, &async) != loomSuccess || async != loomSuccess) {
      out.error += "async error " + std::to_string(async) + "\n";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// Several all-reduces of different types, ops and layouts queued in one group.
TEST_P(CommTest, GroupOfAllReduces) {
  struct Item {
    loomDataType_t type;
    loomRedOp_t op;
    size_t count;
    bool inPlace;
  };
  const std::vector<Item> items = {{loomInt32, loomSum, 100, false},
                                   {loomFloat32, loomMax, 1000, false},
                                   {loomFloat64, loomAvg, 37, true},
                                   {loomBfloat16, loomMin, 4099, false},
                                   {loomUint8, loomProd, 5, true}};
  const auto results = runRanks(options(3), [&](int rank, int n, loomComm_t comm) {
    RankOutcome out;
    std::vector<std::vector<unsigned char>> send(items.size());
    std::vector<std::vector<unsigned char>> recv(items.size());
    std::vector<loomResult_t> rcs;
    rcs.push_back(loomGroupStart());
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      const Pattern p = it.op == loomProd ? Pattern::ProdSafe : Pattern::SmallInts;
      send[i].resize(it.count * typeSize(it.type));
      recv[i].resize(send[i].size(), 0x5C);
      fillInput(send[i].data(), it.type, p, i, rank, 0, it.count, it.op);
      void* dst = it.inPlace ? send[i].data() : recv[i].data();
      rcs.push_back(loomAllReduce(send[i].data(), dst, it.count, it.type, it.op, comm, nullptr));
    }
    rcs.push_back(loomGroupEnd());
    for (loomResult_t rc : rcs) {
      if (rc != loomSuccess) return RankOutcome{err("grouped call", rc, comm), ""};
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      const Pattern p = it.op == loomProd ? Pattern::ProdSafe : Pattern::SmallInts;
      std::vector<unsigned char> expect(send[i].size());
      std::vector<double> tol;
      reduceReference(expect.data(), it.type, it.op, p, i, n, 0, it.count, &tol);
      const auto& got = it.inPlace ? send[i] : recv[i];
      const std::string diff = compareElements(got.data(), expect.data(), it.type, it.count, tol);
      if (!diff.empty()) out.error += "item " + std::to_string(i) + ": " + diff + "\n";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// Every rank sends 4 MiB to every other rank and receives 4 MiB from each, all
// in one group. Ungrouped and in this order, blocking sends would deadlock.
TEST_P(CommTest, GroupedAllPairsExchange) {
  constexpr size_t kCount = size_t{1} << 20;  // fp32: 4 MiB per message
  const auto results = runRanks(options(4), [&](int rank, int n, loomComm_t comm) {
    RankOutcome out;
    // What `src` sends `dst`: distinct for every ordered pair.
    auto message = [&](int src, int dst) {
      std::vector<unsigned char> m(kCount * 4);
      fillInput(m.data(), loomFloat32, Pattern::RandomBytes, 1000 + dst, src, 0, kCount);
      return m;
    };
    std::vector<std::vector<unsigned char>> send(n);
    std::vector<std::vector<unsigned char>> recv(n);
    std::vector<loomResult_t> rcs;
    rcs.push_back(loomGroupStart());
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      send[p] = message(rank, p);
      rcs.push_back(loomSend(send[p].data(), kCount, loomFloat32, p, comm, nullptr));
    }
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      recv[p].assign(kCount * 4, 0x5C);
      rcs.push_back(loomRecv(recv[p].data(), kCount, loomFloat32, p, comm, nullptr));
    }
    rcs.push_back(loomGroupEnd());
    for (loomResult_t rc : rcs) {
      if (rc != loomSuccess) return RankOutcome{err("grouped send/recv", rc, comm), ""};
    }
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      if (recv[p] != message(p, rank))
        out.error += "wrong data from rank " + std::to_string(p) + "\n";
      if (send[p] != message(rank, p))
        out.error += "sendbuff to " + std::to_string(p) + " changed\n";
    }
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// The device paths agree with every rank before a collective; a send/recv
// involves only the ranks that exchange, so it must never start such an
// agreement: ranks 2 and 3 make no call at all and would never join it (an
// agreement begun by the pair fails once they have left). Host buffers here:
// the paths leave them to the host executor.
TEST_P(CommTest, DevicePathSettingsNeverMakeSendRecvWaitForBystanders) {
  for (const char* path : {"direct", "kernel"}) {
    SCOPED_TRACE(path);
    RunOptions o = options(4);
    o.env = {{"LOOM_CUDA_PATH", path}, {"LOOM_TIMEOUT", "10"}};
    const auto results = runRanks(o, [&](int rank, int /*n*/, loomComm_t comm) {
      RankOutcome out;
      auto exchange = [&](int a, int b, float base) {
        if (rank != a && rank != b) return;
        const int peer = rank == a ? b : a;
        std::vector<float> mine(257, base + static_cast<float>(rank));
        std::vector<float> theirs(257, -1.0F);
        loomGroupStart();
        loomSend(mine.data(), mine.size(), loomFloat32, peer, comm, nullptr);
        loomRecv(theirs.data(), theirs.size(), loomFloat32, peer, comm, nullptr);
        const loomResult_t rc = loomGroupEnd();
        if (rc != loomSuccess) {
          out.error += err("pair exchange", rc, comm);
        } else if (theirs != std::vector<float>(257, base + static_cast<float>(peer))) {
          out.error += "wrong data from rank " + std::to_string(peer) + "\n";
        }
      };
      exchange(0, 1, 100.0F);
      exchange(0, 1, 200.0F);
      return out;
    });
    EXPECT_EQ(failures(results), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Launches, CommTest, testing::ValuesIn(kLaunches), launchParamName);

TEST(Comm, VersionMatchesHeader) {
  int version = -1;
  ASSERT_EQ(loomGetVersion(&version), loomSuccess);
  EXPECT_EQ(version, LOOM_VERSION_CODE);
}

// Rank 0 enters an all-reduce its peers never join; aborting its comm from
// another thread must end the call with loomAborted long before LOOM_TIMEOUT.
/// "ADDR:PORT" (as /proc/net/tcp writes them) of the IPv4 sockets this
/// process listens on.
std::set<std::string> ownListeners() {
  std::set<std::string> inodes;
  if (DIR* fds = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(fds)) {
      char target[64] = {};
      const std::string path = std::string("/proc/self/fd/") + entry->d_name;
      if (::readlink(path.c_str(), target, sizeof(target) - 1) > 0 &&
          std::strncmp(target, "socket:[", 8) == 0) {
        inodes.insert(std::string(target + 8, std::strlen(target) - 9));
      }
    }
    ::closedir(fds);
  }
  std::set<std::string> listening;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode;
    if (state == "0A" && inodes.count(inode) != 0) listening.insert(local);
  }
  return listening;
}

// A job on one host can keep its rendezvous on loopback (the torch backend
// does when every rank shares rank 0's host).
TEST(Comm, LocalUniqueIdListensOnLoopbackAndWorks) {
  EXPECT_EQ(loomGetLocalUniqueId(nullptr), loomInvalidArgument);
  const std::set<std::string> before = ownListeners();
  loomUniqueId id;
  ASSERT_EQ(loomGetLocalUniqueId(&id), loomSuccess) << loomGetLastError(nullptr);
  std::vector<std::string> opened;
  for (const std::string& local : ownListeners()) {
    if (before.count(local) == 0) opened.push_back(local);
  }
  ASSERT_EQ(opened.size(), 1u) << "one new listener expected";
  EXPECT_EQ(opened[0].substr(0, 9), "0100007F:") << opened[0] << " is not 127.0.0.1";
  loomComm_t comms[2] = {};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] { EXPECT_EQ(loomCommInitRank(&comms[r], 2, id, r), loomSuccess); });
  }
  for (auto& t : ranks) t.join();
  ASSERT_NE(comms[0], nullptr);
  ASSERT_NE(comms[1], nullptr);
  float sums[2] = {1.0f, 2.0f};
  ranks.clear();
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      EXPECT_EQ(loomAllReduce(&sums[r], &sums[r], 1, loomFloat32, loomSum, comms[r], nullptr),
                loomSuccess);
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(sums[0], 3.0f);
  EXPECT_EQ(sums[1], 3.0f);
  for (loomComm_t c : comms) EXPECT_EQ(loomCommDestroy(c), loomSuccess);
}

TEST(Comm, AbortUnblocksWaitingCall) {
  ScopedEnv env({{"LOOM_TIMEOUT", "20"}});
  constexpr int kRanks = 3;
  loomComm_t comms[kRanks] = {};
  ASSERT_EQ(loomCommInitAll(comms, kRanks, nullptr), loomSuccess) << loomGetLastError(nullptr);

  std::promise<std::pair<loomResult_t, std::string>> done;
  auto result = done.get_future();
  std::atomic<bool> entered{false};
  std::thread waiter([&] {
    std::vector<float> v(1024, 1.0f);
    entered = true;
    const loomResult_t rc =
        loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, comms[0], nullptr);
    done.set_value({rc, loomGetLastError(nullptr)});
  });
  while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it start waiting
  const auto start = Clock::now();
  std::thread aborter([&] { EXPECT_EQ(loomCommAbort(comms[0]), loomSuccess); });

  const bool returned = result.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "the waiting all-reduce did not return within 5 s of the abort";
  // Joining is bounded either way: LOOM_TIMEOUT ends the wait at the latest.
  waiter.join();
  aborter.join();
  const auto [rc, message] = result.get();
  EXPECT_EQ(rc, loomAborted) << loomGetErrorString(rc) << ": " << message;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(loomCommAbort(comms[r]), loomSuccess);
}

// Thread ranks read each other's buffers by pointer in single-copy rounds. A
// rank aborted while a peer still reads its buffers must not return before
// the read ends: its caller may unmap them at once (done here, so a late read
// would crash the test). 3 thread ranks, 32 MiB of floats each (rank r holds
// r + 1, rank 0 input and output in one mapping); rank 0 is aborted once its
// thread sleeps in the call's wait (or has returned). Rank 2 calls `lateMs`
// later than the others.
struct AbortTrial {
  std::vector<loomResult_t> results;
  std::vector<std::string> messages;
  std::vector<float> lastOutputs;  // each rank's last output element
};

using SingleCopyCall = loomResult_t (*)(const float* in, float* out, size_t count, loomComm_t);

/// Whether thread `tid` of this process sleeps (state S in its stat) or has
/// exited. A rank thread that sleeps after it began its call is inside it
/// (a call counts itself in before it can block), so an abort then waits for
/// it; a fixed 3 ms head start let the abort free the communicator before
/// the call under AddressSanitizer. A sleep there may also be a lock on the
/// call's way in rather than its wait, which the abort handles alike.
bool asleepOrGone(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t name = line.rfind(')');  // the thread's name may hold spaces
  return name != std::string::npos && name + 2 < line.size() && line[name + 2] == 'S';
}

AbortTrial abortRankZeroMidSingleCopyCall(SingleCopyCall call, int lateMs) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = size_t{8} << 20;
  constexpr size_t kBytes = kCount * sizeof(float);
  AbortTrial trial;
  trial.results.assign(kRanks, loomInternalError);
  trial.messages.assign(kRanks, "");
  trial.lastOutputs.assign(kRanks, 0.0f);
  loomComm_t comms[kRanks] = {};
  if (loomCommInitAll(comms, kRanks, nullptr) != loomSuccess) {
    ADD_FAILURE() << loomGetLastError(nullptr);
    return trial;
  }
  void* mapped =
      mmap(nullptr, 2 * kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    ADD_FAILURE() << "mmap failed";
    return trial;
  }
  auto* rank0 = static_cast<float*>(mapped);
  std::fill(rank0, rank0 + kCount, 1.0f);
  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks);
  for (int r = 1; r < kRanks; ++r) {
    inputs[r].assign(kCount, static_cast<float>(r + 1));
    outputs[r].assign(kCount, 0.0f);
  }
  std::atomic<int> started{0};
  std::atomic<pid_t> rank0Thread{0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      const float* in = r == 0 ? rank0 : inputs[r].data();
      float* out = r == 0 ? rank0 + kCount : outputs[r].data();
      if (r == 0) rank0Thread.store(gettid());
      started.fetch_add(1);
      if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(lateMs));
      trial.results[r] = call(in, out, kCount, comms[r]);
      trial.messages[r] = loomGetLastError(nullptr);
      if (r == 0) {
        EXPECT_EQ(munmap(mapped, 2 * kBytes), 0);  // the caller owns its buffers again
      } else {
        trial.lastOutputs[r] = out[kCount - 1];
      }
    });
  }
  while (started.load() < kRanks) std::this_thread::yield();
  const auto giveUp = Clock::now() + std::chrono::seconds(20);
  while (!asleepOrGone(rank0Thread.load()) && Clock::now() < giveUp) std::this_thread::yield();
  EXPECT_EQ(loomCommAbort(comms[0]), loomSuccess);
  for (auto& t : ranks) t.join();
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(loomCommAbort(comms[r]), loomSuccess);
  return trial;
}

// A reduce's root reads every input for tens of milliseconds while the others,
// having nothing to read, wait for it: rank 0 must wait for the root's reads.
TEST(Comm, AbortMidSingleCopyRoundWaitsForPeersReadingItsBuffers) {
  ScopedEnv env({{"LOOM_TIMEOUT", "20"}, {"LOOM_ALGO", "direct"}, {"LOOM_SINGLE_COPY_MIN", "64K"}});
  int abortedMidCall = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const AbortTrial trial = abortRankZeroMidSingleCopyCall(
        [](const float* in, float* out, size_t count, loomComm_t comm) {
          return loomReduce(in, out, count, loomFloat32, loomSum, 1, comm, nullptr);
        },
        0);
    if (trial.results[0] == loomAborted) ++abortedMidCall;
    EXPECT_TRUE(trial.results[0] == loomSuccess || trial.results[0] == loomAborted)
        << loomGetErrorString(trial.results[0]);
    for (int r = 1; r < 3; ++r) {
      EXPECT_TRUE(trial.results[r] == loomSuccess || trial.results[r] == loomRemoteError)
          << "rank " << r << ": " << trial.messages[r];
    }
    if (trial.results[1] == loomSuccess) {
      EXPECT_EQ(trial.lastOutputs[1], 6.0f);
    }
  }
  // The abort landed inside the call at least once, or the test proved nothing.
  EXPECT_GT(abortedMidCall, 0);
}

// Rank 0 exposes its buffers and, waiting for rank 2 (30 ms late), is
// aborted: it withdraws. When rank 2 arrives, the peers must not read rank
// 0's input for their shards: they stop with an error naming it ("rank 0 left
// direct round N early"), neither reading a freed buffer nor waiting for
// LOOM_TIMEOUT.
TEST(Comm, PeersOfAWithdrawnRankStopWithAnErrorNamingIt) {
  ScopedEnv env({{"LOOM_TIMEOUT", "20"}, {"LOOM_ALGO", "direct"}, {"LOOM_SINGLE_COPY_MIN", "64K"}});
  int named = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto start = Clock::now();
    const AbortTrial trial = abortRankZeroMidSingleCopyCall(
        [](const float* in, float* out, size_t count, loomComm_t comm) {
          return loomAllReduce(in, out, count, loomFloat32, loomSum, comm, nullptr);
        },
        30);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "a peer waited for its deadline";
    for (int r = 1; r < 3; ++r) {
      if (trial.results[r] == loomSuccess) {
        EXPECT_EQ(trial.lastOutputs[r], 6.0f) << "rank " << r;
        continue;
      }
      EXPECT_EQ(trial.results[r], loomRemoteError) << "rank " << r << ": " << trial.messages[r];
      if (trial.messages[r].find("rank 0 left direct round") != std::string::npos) ++named;
    }
  }
  EXPECT_GT(named, 0) << "no peer ever stopped at rank 0's withdrawal";
}

// loomCommRevoke from another thread ends a waiting call with loomRevoked,
// marks the communicator revoked on the local peer too, and frees nothing:
// later calls are refused at once with the buffer untouched, and the
// communicators are destroyed afterwards as usual, without waiting.
TEST(Comm, RevokeEndsCallsEverywhereAndKeepsTheHandle) {
  ScopedEnv env({{"LOOM_TIMEOUT", "20"}});
  constexpr int kRanks = 2;
  loomComm_t comms[kRanks] = {};
  ASSERT_EQ(loomCommInitAll(comms, kRanks, nullptr), loomSuccess) << loomGetLastError(nullptr);
  std::promise<loomResult_t> done;
  auto result = done.get_future();
  std::atomic<bool> entered{false};
  std::thread waiter([&] {
    std::vector<float> v(1024, 1.0f);
    entered = true;
    done.set_value(
        loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, comms[0], nullptr));
  });
  while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let it start waiting
  const auto start = Clock::now();
  EXPECT_EQ(loomCommRevoke(comms[0]), loomSuccess);
  const bool returned = result.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "the waiting all-reduce did not return within 5 s of the revoke";
  waiter.join();
  EXPECT_EQ(result.get(), loomRevoked);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));

  for (int r = 0; r < kRanks; ++r) {
    float x = 3.0f;
    EXPECT_EQ(loomAllReduce(&x, &x, 1, loomFloat32, loomSum, comms[r], nullptr), loomRevoked)
        << "rank " << r;
    EXPECT_EQ(x, 3.0f);
    EXPECT_NE(std::string(loomGetLastError(comms[r])).find("rank 0 revoked"), std::string::npos)
        << loomGetLastError(comms[r]);
    loomResult_t async = loomSuccess;
    EXPECT_EQ(loomCommGetAsyncError(comms[r], &async), loomSuccess);
    EXPECT_EQ(async, loomRevoked);
  }
  EXPECT_EQ(loomCommRevoke(comms[1]), loomSuccess);  // a second revoke is harmless
  // A revoked communicator can still be split (NCCL allows it), and the new
  // one works.
  loomComm_t fresh[kRanks] = {};
  std::vector<std::thread> splitters;
  std::vector<loomResult_t> splitRc(kRanks, loomInternalError);
  for (int r = 0; r < kRanks; ++r) {
    splitters.emplace_back([&, r] { splitRc[r] = loomCommSplit(comms[r], 0, r, &fresh[r]); });
  }
  for (auto& t : splitters) t.join();
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(splitRc[r], loomSuccess) << r;
  std::vector<std::thread> users;
  std::vector<float> sums(kRanks, 0.0f);
  for (int r = 0; r < kRanks; ++r) {
    users.emplace_back([&, r] {
      sums[r] = 1.0f;
      loomAllReduce(&sums[r], &sums[r], 1, loomFloat32, loomSum, fresh[r], nullptr);
    });
  }
  for (auto& t : users) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(sums[r], 2.0f);
    EXPECT_EQ(loomCommDestroy(fresh[r]), loomSuccess);
  }
  EXPECT_EQ(loomCommDestroy(comms[0]), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comms[1]), loomSuccess);
  EXPECT_EQ(loomCommRevoke(nullptr), loomInvalidArgument);
}

// A communicator's own deadline (loomCommInitRankConfig) wins over
// LOOM_TIMEOUT: a peer that never calls fails the all-reduce in about 1.5 s,
// not 60, and a split inherits it. Bad configs are refused before anything starts.
TEST(Comm, ConfigTimeoutIsPerCommunicator) {
  ScopedEnv env({{"LOOM_TIMEOUT", "60"}});
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  loomCommConfig config = LOOM_COMM_CONFIG_INITIALIZER;
  config.timeoutMs = 1500;
  loomComm_t comms[2] = {};
  std::thread other(
      [&] { EXPECT_EQ(loomCommInitRankConfig(&comms[1], 2, id, 1, &config), loomSuccess); });
  ASSERT_EQ(loomCommInitRankConfig(&comms[0], 2, id, 0, &config), loomSuccess)
      << loomGetLastError(nullptr);
  other.join();
  loomComm_t halves[2] = {};
  std::thread splitter([&] { EXPECT_EQ(loomCommSplit(comms[1], 0, 1, &halves[1]), loomSuccess); });
  ASSERT_EQ(loomCommSplit(comms[0], 0, 0, &halves[0]), loomSuccess) << loomGetLastError(nullptr);
  splitter.join();
  for (loomComm_t c : {comms[0], halves[0]}) {
    float x = 1.0f;
    const auto start = Clock::now();
    EXPECT_EQ(loomAllReduce(&x, &x, 1, loomFloat32, loomSum, c, nullptr), loomRemoteError);
    const auto took = Clock::now() - start;
    EXPECT_GE(took, std::chrono::milliseconds(1400));
    EXPECT_LT(took, std::chrono::seconds(10)) << "LOOM_TIMEOUT (60 s) was used instead";
  }
  for (loomComm_t c : {halves[0], halves[1], comms[0], comms[1]}) {
    EXPECT_EQ(loomCommAbort(c), loomSuccess);
  }

  loomComm_t refused = nullptr;
  loomCommConfig bad = LOOM_COMM_CONFIG_INITIALIZER;
  bad.timeoutMs = -1;
  EXPECT_EQ(loomCommInitRankConfig(&refused, 1, id, 0, &bad), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("timeoutMs=-1"), std::string::npos);
  bad = LOOM_COMM_CONFIG_INITIALIZER;
  bad.size = 4;
  EXPECT_EQ(loomCommInitRankConfig(&refused, 1, id, 0, &bad), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("LOOM_COMM_CONFIG_INITIALIZER"),
            std::string::npos);
  EXPECT_EQ(refused, nullptr);
}

// LOOM_TWO_RANK_SUM decides whether two ranks' single-copy all-reduce has
// each sum the whole message, which both must choose alike: ranks that set it
// differently refuse to start, naming the settings, instead of waiting for
// each other's rounds until LOOM_TIMEOUT.
TEST(Comm, RanksWithDifferentTwoRankSumsRefuseToStart) {
  ScopedEnv env({{"LOOM_TIMEOUT", "10"}, {"LOOM_TWO_RANK_SUM", "shards"}});
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  const pid_t child = fork();
  if (child == 0) {
    setenv("LOOM_TWO_RANK_SUM", "whole", 1);
    loomComm_t comm = nullptr;
    _exit(static_cast<int>(loomCommInitRank(&comm, 2, id, 1)));
  }
  ASSERT_GT(child, 0);
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitRank(&comm, 2, id, 0), loomInvalidUsage);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("twoRankSum="), std::string::npos)
      << loomGetLastError(nullptr);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), static_cast<int>(loomInvalidUsage));
}

// A rank dies (SIGKILL) right after init; its peers' all-reduce must end with
// loomRemoteError within about LOOM_TIMEOUT, naming the dead rank, and the
// survivors must still be able to free their comms.
TEST(Comm, DeadPeerIsRemoteError) {
  RunOptions o;
  o.launch = Launch::Processes;
  o.nranks = 3;
  o.env = {{"LOOM_TIMEOUT", "5"}};
  o.deadlineSeconds = 40;
  const auto results = runRanks(o, [](int rank, int n, loomComm_t comm) {
    if (rank == n - 1) ::raise(SIGKILL);
    std::vector<float> v(4096, 1.0f);
    const auto start = Clock::now();
    const loomResult_t rc =
        loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, comm, nullptr);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    RankOutcome out;
    if (rc != loomRemoteError) out.error += "got " + std::string(loomGetErrorString(rc)) + "\n";
    const std::string msg = loomGetLastError(comm);
    if (msg.find(std::to_string(n - 1)) == std::string::npos) {
      out.error += "message does not name rank " + std::to_string(n - 1) + ": " + msg + "\n";
    }
    if (secs > 15) out.error += "took " + std::to_string(secs) + " s\n";
    return out;
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok()) << results[0].describe(0);
  EXPECT_TRUE(results[1].ok()) << results[1].describe(1);
  EXPECT_NE(results[2].death.find("signal 9"), std::string::npos) << results[2].describe(2);
}

}  // namespace
}  // namespace loomtest

namespace loomtest {
namespace {

TEST(TypeSize, EveryTypeAndBadValues) {
  const std::pair<loomDataType_t, size_t> expected[] = {
      {loomInt8, 1},   {loomUint8, 1},   {loomInt32, 4},   {loomUint32, 4},  {loomInt64, 8},
      {loomUint64, 8}, {loomFloat16, 2}, {loomFloat32, 4}, {loomFloat64, 8}, {loomBfloat16, 2}};
  for (const auto& [type, bytes] : expected) EXPECT_EQ(loomTypeSize(type), bytes) << type;
  loomDataType_t bad{};
  for (int value : {-1, static_cast<int>(loomNumTypes), 1000}) {
    std::memcpy(&bad, &value, sizeof(value));  // as a C caller could pass it
    EXPECT_EQ(loomTypeSize(bad), 0u) << value;
  }
}

}  // namespace
}  // namespace loomtest
