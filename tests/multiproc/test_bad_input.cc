// Bad input through the C API: each case asserts the exact result code, a
// non-empty loomGetLastError message, and that no user buffer was written.
// Rejected calls must fail before any communication, so they are made from one
// thread on a multi-rank comm whose peers never call; LOOM_TIMEOUT=5 bounds
// the wait should validation ever be missing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "guarded_buffer.h"
#include "harness.h"

namespace loomtest {
namespace {

constexpr size_t kElems = 64;

/// Buffers every case may pass, filled with a pattern checked after the call.
struct Buffers {
  GuardedBuffer send{kElems * 8};
  GuardedBuffer recv{kElems * 8};
  Buffers() {
    for (size_t i = 0; i < send.bytes(); ++i) {
      send.data()[i] = static_cast<unsigned char>(i * 7 + 1);
      recv.data()[i] = static_cast<unsigned char>(i * 13 + 2);
    }
  }
  bool untouched() const {
    for (size_t i = 0; i < send.bytes(); ++i) {
      if (send.data()[i] != static_cast<unsigned char>(i * 7 + 1)) return false;
      if (recv.data()[i] != static_cast<unsigned char>(i * 13 + 2)) return false;
    }
    return send.guardsIntact() && recv.guardsIntact();
  }
};

/// Creates `n` ranks in this process and frees them from one thread each, so a
/// destroy that synchronises with peers cannot deadlock the fixture.
class ThreadComms {
 public:
  explicit ThreadComms(int n) : env_({{"LOOM_TIMEOUT", "5"}}), comms_(n, nullptr) {
    rc_ = loomCommInitAll(comms_.data(), n, nullptr);
  }
  ~ThreadComms() {
    if (rc_ != loomSuccess) return;
    std::vector<std::thread> threads;
    for (loomComm_t c : comms_) threads.emplace_back([c] { loomCommDestroy(c); });
    for (auto& t : threads) t.join();
  }
  loomResult_t initResult() const { return rc_; }
  loomComm_t operator[](int r) const { return comms_[r]; }

 private:
  ScopedEnv env_;
  std::vector<loomComm_t> comms_;
  loomResult_t rc_;
};

struct BadCall {
  std::string name;
  loomResult_t expected;
  std::function<loomResult_t(loomComm_t comm, int nranks, Buffers& b)> call;
};

const size_t kHuge = SIZE_MAX / 2;  // times 4 bytes (and nranks) overflows size_t

std::vector<BadCall> badCalls() {
  const loomDataType_t f32 = loomFloat32;
  // Kept as ints and converted only at the call: a C caller may pass any int,
  // but in C++ an enum object holding an out-of-range value is undefined (UBSan).
  // 263 and 257 are valid values plus 256: caught only if the whole int is checked.
  const auto badTypes = {static_cast<int>(loomNumTypes), -1, 263};
  const auto badOps = {static_cast<int>(loomNumOps), -1, 257};
  std::vector<BadCall> t;
  auto add = [&](std::string name, loomResult_t rc,
                 std::function<loomResult_t(loomComm_t, int, Buffers&)> f) {
    t.push_back({std::move(name), rc, std::move(f)});
  };
  const loomResult_t bad = loomInvalidArgument;

  // NULL buffers with a non-zero count. Rooted calls use root 0, the caller,
  // so the buffer in question is one the call really needs.
  add("AllReduce null send", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllReduce(nullptr, b.recv.data(), 4, f32, loomSum, c, nullptr);
  });
  add("AllReduce null recv", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllReduce(b.send.data(), nullptr, 4, f32, loomSum, c, nullptr);
  });
  add("AllGather null send", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllGather(nullptr, b.recv.data(), 4, f32, c, nullptr);
  });
  add("AllGather null recv", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllGather(b.send.data(), nullptr, 4, f32, c, nullptr);
  });
  add("ReduceScatter null send", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomReduceScatter(nullptr, b.recv.data(), 4, f32, loomSum, c, nullptr);
  });
  add("ReduceScatter null recv", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomReduceScatter(b.send.data(), nullptr, 4, f32, loomSum, c, nullptr);
  });
  add("Broadcast null send at root", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomBroadcast(nullptr, b.recv.data(), 4, f32, 0, c, nullptr);
  });
  add("Broadcast null recv", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomBroadcast(b.send.data(), nullptr, 4, f32, 0, c, nullptr);
  });
  add("Reduce null send", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomReduce(nullptr, b.recv.data(), 4, f32, loomSum, 0, c, nullptr);
  });
  add("Reduce null recv at root", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomReduce(b.send.data(), nullptr, 4, f32, loomSum, 0, c, nullptr);
  });
  add("AllToAll null send", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllToAll(nullptr, b.recv.data(), 4, f32, c, nullptr);
  });
  add("AllToAll null recv", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllToAll(b.send.data(), nullptr, 4, f32, c, nullptr);
  });
  add("Gather null send", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomGather(nullptr, b.recv.data(), 4, f32, 0, c, nullptr);
  });
  add("Gather null recv at root", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomGather(b.send.data(), nullptr, 4, f32, 0, c, nullptr);
  });
  add("Scatter null send at root", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomScatter(nullptr, b.recv.data(), 4, f32, 0, c, nullptr);
  });
  add("Scatter null recv", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomScatter(b.send.data(), nullptr, 4, f32, 0, c, nullptr);
  });
  add("Send null", bad,
      [=](loomComm_t c, int, Buffers&) { return loomSend(nullptr, 4, f32, 0, c, nullptr); });
  add("Recv null", bad,
      [=](loomComm_t c, int, Buffers&) { return loomRecv(nullptr, 4, f32, 0, c, nullptr); });

  // count * element size * nranks does not fit in size_t.
  add("AllReduce huge count", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllReduce(b.send.data(), b.recv.data(), kHuge, f32, loomSum, c, nullptr);
  });
  add("AllGather huge count", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllGather(b.send.data(), b.recv.data(), kHuge, f32, c, nullptr);
  });
  add("ReduceScatter huge count", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomReduceScatter(b.send.data(), b.recv.data(), kHuge, f32, loomSum, c, nullptr);
  });
  add("Broadcast huge count", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomBroadcast(b.send.data(), b.recv.data(), kHuge, f32, 0, c, nullptr);
  });
  add("AllToAll huge count", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllToAll(b.send.data(), b.recv.data(), kHuge, f32, c, nullptr);
  });
  add("Send huge count", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomSend(b.send.data(), kHuge, f32, 0, c, nullptr);
  });

  // Types and ops outside their enums.
  for (int tyValue : badTypes) {
    const std::string s = " type " + std::to_string(tyValue);
    add("AllReduce" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomAllReduce(b.send.data(), b.recv.data(), 4, static_cast<loomDataType_t>(tyValue),
                           loomSum, c, nullptr);
    });
    add("AllGather" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomAllGather(b.send.data(), b.recv.data(), 4, static_cast<loomDataType_t>(tyValue), c,
                           nullptr);
    });
    add("Broadcast" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomBroadcast(b.send.data(), b.recv.data(), 4, static_cast<loomDataType_t>(tyValue), 0,
                           c, nullptr);
    });
    add("Recv" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomRecv(b.recv.data(), 4, static_cast<loomDataType_t>(tyValue), 0, c, nullptr);
    });
  }
  for (int opValue : badOps) {
    const std::string s = " op " + std::to_string(opValue);
    add("AllReduce" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomAllReduce(b.send.data(), b.recv.data(), 4, f32, static_cast<loomRedOp_t>(opValue),
                           c, nullptr);
    });
    add("ReduceScatter" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomReduceScatter(b.send.data(), b.recv.data(), 4, f32,
                               static_cast<loomRedOp_t>(opValue), c, nullptr);
    });
    add("Reduce" + s, bad, [=](loomComm_t c, int, Buffers& b) {
      return loomReduce(b.send.data(), b.recv.data(), 4, f32, static_cast<loomRedOp_t>(opValue), 0,
                        c, nullptr);
    });
  }

  // Roots and peers outside [0, nranks).
  for (int which = 0; which < 2; ++which) {
    auto pick = [which](int n) { return which == 0 ? -1 : n; };
    const std::string s = which == 0 ? " -1" : " nranks";
    add("Broadcast root" + s, bad, [=](loomComm_t c, int n, Buffers& b) {
      return loomBroadcast(b.send.data(), b.recv.data(), 4, f32, pick(n), c, nullptr);
    });
    add("Reduce root" + s, bad, [=](loomComm_t c, int n, Buffers& b) {
      return loomReduce(b.send.data(), b.recv.data(), 4, f32, loomSum, pick(n), c, nullptr);
    });
    add("Gather root" + s, bad, [=](loomComm_t c, int n, Buffers& b) {
      return loomGather(b.send.data(), b.recv.data(), 4, f32, pick(n), c, nullptr);
    });
    add("Scatter root" + s, bad, [=](loomComm_t c, int n, Buffers& b) {
      return loomScatter(b.send.data(), b.recv.data(), 4, f32, pick(n), c, nullptr);
    });
    add("Send peer" + s, bad, [=](loomComm_t c, int n, Buffers& b) {
      return loomSend(b.send.data(), 4, f32, pick(n), c, nullptr);
    });
    add("Recv peer" + s, bad, [=](loomComm_t c, int n, Buffers& b) {
      return loomRecv(b.recv.data(), 4, f32, pick(n), c, nullptr);
    });
  }

  // A recvbuff overlapping sendbuff other than in the in-place layout.
  add("AllReduce partial overlap", bad, [=](loomComm_t c, int, Buffers& b) {
    return loomAllReduce(b.send.data(), b.send.data() + 4, 8, f32, loomSum, c, nullptr);
  });

  // NULL communicator.
  add("AllReduce null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomAllReduce(b.send.data(), b.recv.data(), 4, f32, loomSum, nullptr, nullptr);
  });
  add("AllGather null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomAllGather(b.send.data(), b.recv.data(), 4, f32, nullptr, nullptr);
  });
  add("ReduceScatter null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomReduceScatter(b.send.data(), b.recv.data(), 4, f32, loomSum, nullptr, nullptr);
  });
  add("Broadcast null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomBroadcast(b.send.data(), b.recv.data(), 4, f32, 0, nullptr, nullptr);
  });
  add("Reduce null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomReduce(b.send.data(), b.recv.data(), 4, f32, loomSum, 0, nullptr, nullptr);
  });
  add("AllToAll null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomAllToAll(b.send.data(), b.recv.data(), 4, f32, nullptr, nullptr);
  });
  add("Gather null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomGather(b.send.data(), b.recv.data(), 4, f32, 0, nullptr, nullptr);
  });
  add("Scatter null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomScatter(b.send.data(), b.recv.data(), 4, f32, 0, nullptr, nullptr);
  });
  add("Send null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomSend(b.send.data(), 4, f32, 0, nullptr, nullptr);
  });
  add("Recv null comm", bad, [=](loomComm_t, int, Buffers& b) {
    return loomRecv(b.recv.data(), 4, f32, 0, nullptr, nullptr);
  });
  add("CommCount null comm", bad, [](loomComm_t, int, Buffers&) {
    int n = -7;
    const loomResult_t rc = loomCommCount(nullptr, &n);
    return n == -7 ? rc : loomInternalError;  // the out-value must be left alone
  });
  add("CommUserRank null comm", bad, [](loomComm_t, int, Buffers&) {
    int r = -7;
    const loomResult_t rc = loomCommUserRank(nullptr, &r);
    return r == -7 ? rc : loomInternalError;
  });
  add("CommGetAsyncError null comm", bad, [](loomComm_t, int, Buffers&) {
    loomResult_t e = loomNumResults;
    const loomResult_t rc = loomCommGetAsyncError(nullptr, &e);
    return e == loomNumResults ? rc : loomInternalError;
  });
  add("CommSplit null comm", bad, [](loomComm_t, int, Buffers&) {
    loomComm_t out = nullptr;
    return loomCommSplit(nullptr, 0, 0, &out);
  });

  // NULL out-pointers.
  add("CommCount null out", bad,
      [](loomComm_t c, int, Buffers&) { return loomCommCount(c, nullptr); });
  add("CommUserRank null out", bad,
      [](loomComm_t c, int, Buffers&) { return loomCommUserRank(c, nullptr); });
  add("CommGetAsyncError null out", bad,
      [](loomComm_t c, int, Buffers&) { return loomCommGetAsyncError(c, nullptr); });
  add("GetVersion null out", bad,
      [](loomComm_t, int, Buffers&) { return loomGetVersion(nullptr); });
  add("GetUniqueId null out", bad,
      [](loomComm_t, int, Buffers&) { return loomGetUniqueId(nullptr); });
  return t;
}

void runTable(int nranks) {
  ThreadComms comms(nranks);
  ASSERT_EQ(comms.initResult(), loomSuccess) << loomGetLastError(nullptr);
  for (const BadCall& bc : badCalls()) {
    SCOPED_TRACE(bc.name + " on a " + std::to_string(nranks) + "-rank comm");
    Buffers b;
    const loomResult_t rc = bc.call(comms[0], nranks, b);
    EXPECT_EQ(rc, bc.expected) << loomGetErrorString(rc) << ": " << loomGetLastError(comms[0]);
    const char* msg = loomGetLastError(comms[0]);
    ASSERT_NE(msg, nullptr);
    EXPECT_STRNE(msg, "") << "no message for a rejected call";
    EXPECT_TRUE(b.untouched()) << "a rejected call wrote into a user buffer";
  }
}

TEST(BadInput, RejectedOnOneRankComm) { runTable(1); }
TEST(BadInput, RejectedOnThreeRankComm) { runTable(3); }

// NULL buffers are fine when nothing is to be read or written.
TEST(BadInput, NullBuffersWithCountZeroSucceed) {
  RunOptions options;
  options.nranks = 3;
  const auto results = runRanks(options, [](int rank, int n, loomComm_t c) {
    RankOutcome out;
    const loomDataType_t f = loomFloat32;
    auto expectOk = [&](const char* what, loomResult_t rc) {
      if (rc != loomSuccess) {
        out.error += std::string(what) + " returned " + loomGetErrorString(rc) + ": " +
                     loomGetLastError(c) + "\n";
      }
    };
    expectOk("AllReduce", loomAllReduce(nullptr, nullptr, 0, f, loomSum, c, nullptr));
    expectOk("AllGather", loomAllGather(nullptr, nullptr, 0, f, c, nullptr));
    expectOk("ReduceScatter", loomReduceScatter(nullptr, nullptr, 0, f, loomMax, c, nullptr));
    expectOk("Broadcast", loomBroadcast(nullptr, nullptr, 0, f, n - 1, c, nullptr));
    expectOk("Reduce", loomReduce(nullptr, nullptr, 0, f, loomSum, 0, c, nullptr));
    expectOk("AllToAll", loomAllToAll(nullptr, nullptr, 0, f, c, nullptr));
    expectOk("Gather", loomGather(nullptr, nullptr, 0, f, 0, c, nullptr));
    expectOk("Scatter", loomScatter(nullptr, nullptr, 0, f, n - 1, c, nullptr));
    expectOk("GroupStart", loomGroupStart());
    expectOk("Send", loomSend(nullptr, 0, f, (rank + 1) % n, c, nullptr));
    expectOk("Recv", loomRecv(nullptr, 0, f, (rank + n - 1) % n, c, nullptr));
    expectOk("GroupEnd", loomGroupEnd());
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

// Buffers a rank does not use (root-only ones on other ranks) may be NULL even
// with a non-zero count, as in NCCL.
TEST(BadInput, UnusedNonRootBuffersMayBeNull) {
  RunOptions options;
  options.nranks = 3;
  const auto results = runRanks(options, [](int rank, int n, loomComm_t c) {
    RankOutcome out;
    constexpr int kRoot = 1;
    const bool root = rank == kRoot;
    std::vector<float> send(n * 4, static_cast<float>(rank));
    std::vector<float> recv(n * 4, -1.0f);
    auto expectOk = [&](const char* what, loomResult_t rc) {
      if (rc != loomSuccess) {
        out.error += std::string(what) + " returned " + loomGetErrorString(rc) + ": " +
                     loomGetLastError(c) + "\n";
      }
    };
    expectOk("Broadcast", loomBroadcast(root ? send.data() : nullptr, recv.data(), 4, loomFloat32,
                                        kRoot, c, nullptr));
    if (recv[3] != kRoot) out.error += "Broadcast result " + std::to_string(recv[3]) + "\n";
    expectOk("Reduce", loomReduce(send.data(), root ? recv.data() : nullptr, 4, loomFloat32,
                                  loomSum, kRoot, c, nullptr));
    if (root && recv[3] != n * (n - 1) / 2) out.error += "Reduce result\n";
    expectOk("Gather", loomGather(send.data(), root ? recv.data() : nullptr, 4, loomFloat32, kRoot,
                                  c, nullptr));
    if (root && recv[4 * (n - 1)] != n - 1) out.error += "Gather result\n";
    expectOk("Scatter", loomScatter(root ? send.data() : nullptr, recv.data(), 4, loomFloat32,
                                    kRoot, c, nullptr));
    if (recv[0] != kRoot) out.error += "Scatter result\n";
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

TEST(BadInput, InitRankArguments) {
  ScopedEnv env({{"LOOM_TIMEOUT", "5"}});
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess) << loomGetLastError(nullptr);
  const auto sentinel = reinterpret_cast<loomComm_t>(uintptr_t{0x1234});
  struct Row {
    const char* name;
    int nranks;
    int rank;
  };
  for (const Row& row :
       {Row{"nranks 0", 0, 0}, Row{"nranks -1", -1, 0}, Row{"rank == nranks", 2, 2},
        Row{"rank > nranks", 2, 5}, Row{"rank -1", 2, -1}}) {
    SCOPED_TRACE(row.name);
    loomComm_t comm = sentinel;
    EXPECT_EQ(loomCommInitRank(&comm, row.nranks, id, row.rank), loomInvalidArgument);
    EXPECT_STRNE(loomGetLastError(nullptr), "");
    EXPECT_EQ(comm, sentinel) << "output written on failure";
  }
  EXPECT_EQ(loomCommInitRank(nullptr, 2, id, 0), loomInvalidArgument);
  EXPECT_STRNE(loomGetLastError(nullptr), "");
}

TEST(BadInput, MalformedUniqueId) {
  ScopedEnv env({{"LOOM_TIMEOUT", "5"}});
  std::mt19937 rng(12345);
  loomUniqueId random;
  for (char& c : random.internal) c = static_cast<char>(rng());
  loomUniqueId zeros;
  std::memset(&zeros, 0, sizeof zeros);
  for (const loomUniqueId* id : {&random, &zeros}) {
    SCOPED_TRACE(id == &random ? "random bytes" : "all zeros");
    loomComm_t comm = nullptr;
    EXPECT_EQ(loomCommInitRank(&comm, 2, *id, 0), loomInvalidArgument);
    EXPECT_STRNE(loomGetLastError(nullptr), "");
    EXPECT_EQ(comm, nullptr);
  }
}

TEST(BadInput, InitAllArguments) {
  loomComm_t comms[2] = {nullptr, nullptr};
  EXPECT_EQ(loomCommInitAll(comms, 0, nullptr), loomInvalidArgument);
  EXPECT_STRNE(loomGetLastError(nullptr), "");
  EXPECT_EQ(loomCommInitAll(comms, -1, nullptr), loomInvalidArgument);
  EXPECT_STRNE(loomGetLastError(nullptr), "");
  EXPECT_EQ(loomCommInitAll(nullptr, 2, nullptr), loomInvalidArgument);
  EXPECT_STRNE(loomGetLastError(nullptr), "");
  EXPECT_EQ(comms[0], nullptr);
  EXPECT_EQ(comms[1], nullptr);
}

// docs/env.md: malformed values are loomInvalidArgument naming the variable.
TEST(BadInput, MalformedEnvironment) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"LOOM_TRANSPORT", "carrier-pigeon"},
                                                        {"LOOM_NET", "carrier-pigeon"},
                                                        {"LOOM_CUDA_PATH", "warp-drive"},
                                                        {"LOOM_TIMEOUT", "soon"},
                                                        {"LOOM_ALGO", "magic"},
                                                        {"LOOM_CHUNK_SIZE", "10"},
                                                        {"LOOM_NCHANNELS", "0"},
                                                        {"LOOM_NCHANNELS", "many"},
                                                        {"LOOM_CUDA_SLOT_BYTES", "5000"},
                                                        {"LOOM_CUDA_SLOT_BYTES", "1K"},
                                                        {"LOOM_CUDA_SLOT_BYTES", "64M"},
                                                        {"LOOM_CUDA_SCOPE", "gpu"},
                                                        {"LOOM_CUDA_P2P", "maybe"}}) {
    SCOPED_TRACE(name + "=" + value);
    ScopedEnv env({{name, value}});
    loomComm_t comms[2] = {nullptr, nullptr};
    EXPECT_EQ(loomCommInitAll(comms, 2, nullptr), loomInvalidArgument);
    EXPECT_NE(std::string(loomGetLastError(nullptr)).find(name), std::string::npos)
        << loomGetLastError(nullptr);
  }
}

TEST(BadInput, ErrorStringsAreDistinct) {
  std::set<std::string> seen;
  for (int r = 0; r < loomNumResults; ++r) {
    const char* s = loomGetErrorString(static_cast<loomResult_t>(r));
    ASSERT_NE(s, nullptr) << "code " << r;
    EXPECT_STRNE(s, "") << "code " << r;
    EXPECT_TRUE(seen.insert(s).second) << "code " << r << " repeats '" << s << "'";
  }
  EXPECT_NE(loomGetErrorString(loomNumResults), nullptr);
  EXPECT_NE(loomGetErrorString(static_cast<loomResult_t>(-1)), nullptr);
  EXPECT_NE(loomGetErrorString(static_cast<loomResult_t>(1000)), nullptr);
  EXPECT_NE(loomGetLastError(nullptr), nullptr);
}

TEST(BadInput, SharedBuffersAndRegistration) {
  ThreadComms comms(1);
  ASSERT_EQ(comms.initResult(), loomSuccess);
  const loomComm_t comm = comms[0];
  EXPECT_EQ(loomMemAlloc(nullptr, 10), loomInvalidArgument);
  std::vector<char> heap(64);
  EXPECT_EQ(loomMemFree(heap.data()), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("not allocated by loomMemAlloc"),
            std::string::npos);
  EXPECT_EQ(loomMemFree(nullptr), loomSuccess);
  void* shared = nullptr;
  ASSERT_EQ(loomMemAlloc(&shared, 4096), loomSuccess);
  void* handle = nullptr;
  EXPECT_EQ(loomCommRegister(comm, shared, 4096, nullptr), loomInvalidArgument);
  EXPECT_EQ(loomCommRegister(comm, nullptr, 4096, &handle), loomInvalidArgument);
  EXPECT_EQ(loomCommRegister(nullptr, shared, 4096, &handle), loomInvalidArgument);
  EXPECT_EQ(loomCommDeregister(comm, heap.data()), loomInvalidArgument);
  ASSERT_EQ(loomCommRegister(comm, shared, 4096, &handle), loomSuccess);
  // An all-reduce on a registered buffer, and the buffer is what it was told.
  auto* values = static_cast<float*>(shared);
  for (int i = 0; i < 1024; ++i) values[i] = static_cast<float>(i);
  ASSERT_EQ(loomAllReduce(values, values, 1024, loomFloat32, loomSum, comm, nullptr), loomSuccess);
  EXPECT_EQ(values[1023], 1023.0f);
  EXPECT_EQ(loomCommDeregister(comm, handle), loomSuccess);
  EXPECT_EQ(loomCommDeregister(comm, handle), loomInvalidArgument);
  EXPECT_EQ(loomMemFree(shared), loomSuccess);
  EXPECT_EQ(loomMemFree(shared), loomInvalidArgument);
}

TEST(BadInput, GroupEndWithoutStart) {
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);
  EXPECT_STRNE(loomGetLastError(nullptr), "");
  // Nested empty groups are fine, and leave no group open behind them.
  EXPECT_EQ(loomGroupStart(), loomSuccess);
  EXPECT_EQ(loomGroupStart(), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);
}

TEST(BadInput, AbortFreesComm) {
  ScopedEnv env({{"LOOM_TIMEOUT", "5"}});
  loomComm_t one = nullptr;
  ASSERT_EQ(loomCommInitAll(&one, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommAbort(one), loomSuccess) << loomGetLastError(nullptr);
  // Aborting idle comms of a multi-rank world must not wait for the peers.
  loomComm_t two[2] = {nullptr, nullptr};
  ASSERT_EQ(loomCommInitAll(two, 2, nullptr), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommAbort(two[0]), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommAbort(two[1]), loomSuccess) << loomGetLastError(nullptr);
}

/// What one rank of the LOOM_CHECK tests saw, packed into its report.
std::string checkReport(loomResult_t rc, loomComm_t comm, bool untouched) {
  return std::to_string(static_cast<int>(rc)) + (untouched ? " untouched " : " written ") +
         (rc == loomSuccess ? "" : loomGetLastError(comm));
}

TEST(BadInput, CheckCatchesCountMismatch) {
  RunOptions options;
  options.nranks = 2;
  options.env = {{"LOOM_CHECK", "1"}, {"LOOM_TIMEOUT", "10"}};
  const auto results = runRanks(options, [](int rank, int, loomComm_t c) {
    Buffers b;
    const size_t count = rank == 0 ? 8 : 9;
    const loomResult_t rc =
        loomAllReduce(b.send.data(), b.recv.data(), count, loomFloat32, loomSum, c, nullptr);
    return RankOutcome{"", checkReport(rc, c, b.untouched())};
  });
  ASSERT_EQ(failures(results), "");
  const std::string& r0 = results[0].outcome.report;
  const std::string& r1 = results[1].outcome.report;
  const std::string invalidUsage = std::to_string(static_cast<int>(loomInvalidUsage)) + " ";
  // The rank whose count differs must be told, and named.
  EXPECT_EQ(r1.rfind(invalidUsage + "untouched ", 0), 0u) << r1;
  EXPECT_NE(r1.find("rank 1"), std::string::npos) << r1;
  // Rank 0 matched nobody either: it must not succeed (nor hang: LOOM_TIMEOUT).
  EXPECT_NE(r0.rfind(std::to_string(static_cast<int>(loomSuccess)) + " ", 0), 0u) << r0;
  if (r0.rfind(invalidUsage, 0) == 0) {
    EXPECT_NE(r0.find("untouched"), std::string::npos) << r0;
    EXPECT_NE(r0.find("rank 1"), std::string::npos) << r0;
  }
}

TEST(BadInput, CheckPassesAgreeingCalls) {
  RunOptions options;
  options.nranks = 3;
  options.env = {{"LOOM_CHECK", "1"}};
  const auto results = runRanks(options, [](int, int, loomComm_t c) {
    RankOutcome out;
    std::vector<float> v(16, 1.0f);
    for (int i = 0; i < 3; ++i) {
      const loomResult_t rc =
          loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, c, nullptr);
      if (rc != loomSuccess) out.error = loomGetLastError(c);
    }
    if (out.error.empty() && v[5] != 27.0f) out.error = "wrong sum " + std::to_string(v[5]);
    return out;
  });
  EXPECT_EQ(failures(results), "");
}

}  // namespace
}  // namespace loomtest
