// "Failure is an answer": faults injected into real processes. A peer that is
// SIGKILLed (between or in the middle of collectives), stalls, closes its
// sockets, or a stranger that talks to the rendezvous port must turn into a
// prompt, precise result on every other rank, never a hang:
//   - loomRemoteError naming a rank, within LOOM_TIMEOUT + 1 s of the fault,
//   - loomCommGetAsyncError then says loomRemoteError,
//   - loomCommDestroy returns (bounded by the launcher's deadline),
//   - loomCommAbort from another thread ends a waiting call with loomAborted.
// LOOM_TIMEOUT is 3 s. Every world's parameters come from a seed printed with
// its results; LOOM_FAULT_SEED changes the base seed, LOOM_FAULT_REPEAT runs
// more seeds per case. Measured detection times are printed ("[fault] ...").
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fault_harness.h"
#include "harness.h"

namespace loomtest {
namespace {

constexpr int kTimeout = 3;  // LOOM_TIMEOUT for every world here
constexpr double kBoundMs = (kTimeout + 1) * 1000.0;
/// Bound on iterations of loops that end with a fault (the fault comes first).
constexpr int kMaxIterations = 100000;

// --- collectives under test ---------------------------------------------------------

enum class Kind {
  AllReduceSmall,
  AllReduceLarge,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  SendRecv
};

const Kind kAllKinds[] = {Kind::AllReduceSmall, Kind::AllReduceLarge, Kind::AllGather,
                          Kind::ReduceScatter,  Kind::Broadcast,      Kind::Reduce,
                          Kind::AllToAll,       Kind::Gather,         Kind::Scatter,
                          Kind::SendRecv};

const char* kindName(Kind k) {
  switch (k) {
    case Kind::AllReduceSmall:
      return "AllReduceSmall";
    case Kind::AllReduceLarge:
      return "AllReduceLarge";
    case Kind::AllGather:
      return "AllGather";
    case Kind::ReduceScatter:
      return "ReduceScatter";
    case Kind::Broadcast:
      return "Broadcast";
    case Kind::Reduce:
      return "Reduce";
    case Kind::AllToAll:
      return "AllToAll";
    case Kind::Gather:
      return "Gather";
    case Kind::Scatter:
      return "Scatter";
    case Kind::SendRecv:
      return "SendRecv";
  }
  return "?";
}

/// What a timeout message must name for this kind (the operation's label).
const char* labelName(Kind k) {
  switch (k) {
    case Kind::AllReduceSmall:
    case Kind::AllReduceLarge:
      return "AllReduce";
    case Kind::SendRecv:
      return "send/recv";
    default:
      return kindName(k);
  }
}

/// Every rank needs every other rank's data: no survivor can finish the
/// collective the victim never contributed to.
bool needsEveryone(Kind k) {
  return k != Kind::Broadcast && k != Kind::Reduce && k != Kind::Gather && k != Kind::Scatter;
}

/// Elements per rank block (fp32).
size_t blockCount(Kind k) {
  switch (k) {
    case Kind::AllReduceSmall:
      return 64;
    case Kind::AllReduceLarge:
      return size_t{512} << 10;  // 2 MiB
    default:
      return size_t{32} << 10;  // 128 KiB per block
  }
}

/// `count` floats from the heap, or from loomMemAlloc registered with
/// `sharedWith` where that is not null (peers in other processes map those).
class Floats {
 public:
  Floats(size_t count, float value, loomComm_t sharedWith) : comm_(sharedWith) {
    if (comm_ != nullptr) {
      void* memory = nullptr;
      if (loomMemAlloc(&memory, count * sizeof(float)) != loomSuccess ||
          loomCommRegister(comm_, memory, count * sizeof(float), &handle_) != loomSuccess) {
        throw std::runtime_error(std::string("shared buffer: ") + loomGetLastError(comm_));
      }
      data_ = static_cast<float*>(memory);
    } else {
      heap_.resize(count);
      data_ = heap_.data();
    }
    std::fill(data_, data_ + count, value);
  }
  ~Floats() {
    if (comm_ != nullptr) {
      loomCommDeregister(comm_, handle_);
      loomMemFree(data_);
    }
  }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
  float* data() { return data_; }

 private:
  loomComm_t comm_;
  void* handle_ = nullptr;
  std::vector<float> heap_;
  float* data_ = nullptr;
};

/// LOOMTEST_SHARED_BUFFERS=all: every rank's buffers are shared (Floats).
loomComm_t sharedWith(loomComm_t comm) {
  const char* which = std::getenv("LOOMTEST_SHARED_BUFFERS");
  return which != nullptr && std::string(which) == "all" ? comm : nullptr;
}

struct Buffers {
  Floats send;
  Floats recv;
  Buffers(Kind k, int rank, int n, loomComm_t shared = nullptr)
      : send(blockCount(k) * n, static_cast<float>(rank + 1), shared),
        recv(blockCount(k) * n, 0.0f, shared) {}
};

/// Runs iteration `iter` of kind `k`. Rooted kinds rotate the root.
loomResult_t runKind(Kind k, int iter, int rank, int n, loomComm_t comm, Buffers& b) {
  const size_t c = blockCount(k);
  const int root = iter % n;
  float* s = b.send.data();
  float* r = b.recv.data();
  switch (k) {
    case Kind::AllReduceSmall:
    case Kind::AllReduceLarge:
      return loomAllReduce(s, r, c, loomFloat32, loomSum, comm, nullptr);
    case Kind::AllGather:
      return loomAllGather(s, r, c, loomFloat32, comm, nullptr);
    case Kind::ReduceScatter:
      return loomReduceScatter(s, r, c, loomFloat32, loomSum, comm, nullptr);
    case Kind::Broadcast:
      return loomBroadcast(s, r, c, loomFloat32, root, comm, nullptr);
    case Kind::Reduce:
      return loomReduce(s, r, c, loomFloat32, loomSum, root, comm, nullptr);
    case Kind::AllToAll:
      return loomAllToAll(s, r, c, loomFloat32, comm, nullptr);
    case Kind::Gather:
      return loomGather(s, r, c, loomFloat32, root, comm, nullptr);
    case Kind::Scatter:
      return loomScatter(s, r, c, loomFloat32, root, comm, nullptr);
    case Kind::SendRecv: {
      // Everyone exchanges a block with everyone, in one group.
      loomResult_t first = loomGroupStart();
      for (int p = 0; p < n; ++p) {
        if (p == rank) continue;
        const loomResult_t a = loomSend(s + p * c, c, loomFloat32, p, comm, nullptr);
        const loomResult_t z = loomRecv(r + p * c, c, loomFloat32, p, comm, nullptr);
        if (first == loomSuccess) first = a != loomSuccess ? a : z;
      }
      const loomResult_t end = loomGroupEnd();
      return end != loomSuccess ? end : first;
    }
  }
  return loomInternalError;
}

// --- seeds and small helpers -----------------------------------------------------------

uint64_t baseSeed() {
  const char* text = std::getenv("LOOM_FAULT_SEED");
  return text ? std::strtoull(text, nullptr, 0) : 0x5eed2024;
}

int repeats() {
  const char* text = std::getenv("LOOM_FAULT_REPEAT");
  const int n = text ? std::atoi(text) : 1;
  return n < 1 ? 1 : n;
}

uint64_t mixSeed(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

double msSince(int64_t ns) { return (monotonicNs() - ns) / 1e6; }

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

/// Rank numbers a message mentions as "rank N".
std::vector<int> ranksNamed(const std::string& message) {
  std::vector<int> out;
  static const std::regex pattern("rank ([0-9]+)");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    out.push_back(std::stoi((*it)[1].str()));
  }
  return out;
}

bool names(const std::string& message, int rank) {
  for (int r : ranksNamed(message)) {
    if (r == rank) return true;
  }
  return false;
}

bool namesOther(const std::string& message, int self) {
  for (int r : ranksNamed(message)) {
    if (r != self) return true;
  }
  return false;
}

std::string excerpt(const std::string& s, size_t max = 220) {
  return s.size() <= max ? s : s.substr(0, max) + "...";
}

/// What a survivor saw, serialised into its report: one line of numbers, then
/// the message.
struct Seen {
  int iter = -1;      ///< iteration that failed; -1 when every call succeeded
  int completed = 0;  ///< iterations that succeeded
  int rc = 0;
  double callMs = 0;         ///< duration of the failing call
  double sinceFaultMs = -1;  ///< from the fault's time stamp to the failure's return
  int async = -1;            ///< loomCommGetAsyncError after the failure
  std::string message;

  std::string encode() const {
    char line[160];
    std::snprintf(line, sizeof line, "%d %d %d %.3f %.3f %d\n", iter, completed, rc, callMs,
                  sinceFaultMs, async);
    return line + message;
  }
  static bool decode(const std::string& text, Seen* out) {
    const size_t eol = text.find('\n');
    if (eol == std::string::npos) return false;
    if (std::sscanf(text.c_str(), "%d %d %d %lf %lf %d", &out->iter, &out->completed, &out->rc,
                    &out->callMs, &out->sinceFaultMs, &out->async) != 6) {
      return false;
    }
    out->message = text.substr(eol + 1);
    return true;
  }
};

/// Runs iterations [0, cap) until one fails, and at most `extraAfterFault`
/// iterations after the one during which the fault's time stamp appeared.
/// Records the failure, or how many iterations succeeded.
Seen runUntilFailure(Kind kind, int cap, int extraAfterFault, FaultContext& ctx, Buffers& b,
                     const std::atomic<int64_t>& faultNs) {
  Seen seen;
  int limit = cap;
  for (int iter = 0; iter < limit; ++iter) {
    if (faultNs.load() != 0 && limit > iter + extraAfterFault) limit = iter + extraAfterFault;
    const int64_t start = monotonicNs();
    const loomResult_t rc = runKind(kind, iter, ctx.rank, ctx.nranks, ctx.comm, b);
    if (rc == loomSuccess) {
      seen.completed = iter + 1;
      continue;
    }
    seen.callMs = msSince(start);
    const int64_t fault = faultNs.load();
    seen.sinceFaultMs = fault != 0 ? msSince(fault) : -1;
    seen.iter = iter;
    seen.rc = rc;
    seen.message = loomGetLastError(ctx.comm);
    loomResult_t async = loomNumResults;
    if (loomCommGetAsyncError(ctx.comm, &async) != loomSuccess) async = loomNumResults;
    seen.async = async;
    break;
  }
  return seen;
}

/// Survivors wait here (bounded) until every survivor is past its last call,
/// so none leaves early and turns a stall into a closed connection for the rest.
void survivorBarrier(FaultContext& ctx, int survivors) {
  ctx.shared->survivorsDone.fetch_add(1);
  const int64_t until = monotonicNs() + int64_t{2 * kTimeout + 3} * 1000000000;
  while (ctx.shared->survivorsDone.load() < survivors && monotonicNs() < until) sleepMs(5);
}

/// Checks common to every survivor that failed; returns "" or the problems.
std::string checkFailure(const Seen& s, int self, bool expectTimedOut, const char* label) {
  std::string bad;
  if (s.rc != loomRemoteError) {
    bad += "result " + std::to_string(s.rc) + " (" +
           loomGetErrorString(static_cast<loomResult_t>(s.rc)) + "), expected loomRemoteError; ";
  }
  if (!namesOther(s.message, self)) bad += "message names no other rank; ";
  if (s.callMs > kBoundMs) bad += "failing call took " + std::to_string(s.callMs) + " ms; ";
  if (s.sinceFaultMs < 0) bad += "failed before the fault happened; ";
  if (s.sinceFaultMs > kBoundMs) {
    bad += "failure came " + std::to_string(s.sinceFaultMs) + " ms after the fault; ";
  }
  if (s.async != loomRemoteError) {
    bad += "loomCommGetAsyncError gave " + std::to_string(s.async) + "; ";
  }
  if (expectTimedOut) {
    if (s.message.find("timed out") == std::string::npos) bad += "message lacks 'timed out'; ";
    if (s.message.find(label) == std::string::npos) {
      bad += std::string("message lacks '") + label + "'; ";
    }
  }
  return bad;
}

WorldSpec world(const std::string& label, int nranks, Transport transport) {
  WorldSpec w;
  w.label = label;
  w.nranks = nranks;
  w.transport = transport;
  w.timeoutSeconds = kTimeout;
  return w;
}

// --- 1. kill ---------------------------------------------------------------------------

enum class KillMode { Between, Mid };

struct KillPlan {
  uint64_t seed = 0;
  Kind kind = Kind::AllReduceSmall;
  Transport transport = Transport::Shm;
  int nranks = 3;
  int victim = 0;
  int killAt = 0;  ///< Between: collectives completed first; Mid: iteration when the timer starts
  KillMode mode = KillMode::Between;
  int delayUs = 0;  ///< Mid: delay of the killing thread
  int extra = 0;    ///< iterations survivors attempt after they saw the kill's time stamp

  std::string label() const {
    std::ostringstream out;
    out << kindName(kind) << "/" << transportName(transport) << " seed=0x" << std::hex << seed
        << std::dec << " n=" << nranks << " victim=" << victim
        << (mode == KillMode::Between ? " between, after " : " mid, timer at iteration ") << killAt
        << (mode == KillMode::Mid ? " + " + std::to_string(delayUs) + " us" : "");
    return out.str();
  }
};

KillPlan makeKillPlan(Kind kind, Transport transport, uint64_t seed) {
  std::mt19937_64 rng(seed);
  KillPlan p;
  p.seed = seed;
  p.kind = kind;
  p.transport = transport;
  p.nranks = 3 + static_cast<int>(rng() % 2);
  p.victim = static_cast<int>(rng() % p.nranks);
  p.killAt = static_cast<int>(rng() % 51);
  p.mode = rng() % 2 == 0 ? KillMode::Between : KillMode::Mid;
  p.delayUs = static_cast<int>(rng() % 5001);
  p.extra = 2 * p.nranks + 2;
  return p;
}

FaultBody killBody(const KillPlan& p) {
  return [p](FaultContext& ctx) {
    Buffers b(p.kind, ctx.rank, ctx.nranks, sharedWith(ctx.comm));
    RankOutcome out;
    if (ctx.rank == p.victim) {
      // Mid: keeps calling collectives until the timer's SIGKILL lands.
      for (int iter = 0; iter < kMaxIterations; ++iter) {
        if (iter == p.killAt && p.mode == KillMode::Between) {
          ctx.shared->killNs.store(monotonicNs());
          ::raise(SIGKILL);
        }
        if (iter == p.killAt && p.mode == KillMode::Mid) {
          FaultShared* shared = ctx.shared;
          std::thread([shared, delay = p.delayUs] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay));
            shared->killNs.store(monotonicNs());
            ::raise(SIGKILL);
          }).detach();
        }
        const loomResult_t rc = runKind(p.kind, iter, ctx.rank, ctx.nranks, ctx.comm, b);
        if (rc != loomSuccess) {
          // Before its own death nothing may fail; report it, then die as planned.
          out.error = "victim's iteration " + std::to_string(iter) +
                      " failed before the kill: " + loomGetLastError(ctx.comm);
          if (p.mode == KillMode::Mid && iter >= p.killAt) sleepMs(10000);
          return out;
        }
        ctx.shared->victimCompleted.store(iter + 1);
      }
      sleepMs(10000);  // Mid: the timer kills it long before this ends
      out.error = "victim survived";
      return out;
    }
    out.report =
        runUntilFailure(p.kind, kMaxIterations, p.extra, ctx, b, ctx.shared->killNs).encode();
    return out;
  };
}

std::string checkKillWorld(const KillPlan& p, const WorldResult& w, std::string* summary) {
  std::ostringstream bad;
  std::ostringstream info;
  const auto& victim = w.ranks[p.victim];
  if (victim.signal != SIGKILL || victim.reported) {
    bad << "victim: expected death by SIGKILL, got " << victim.describe(p.victim) << "\n";
  }
  if (w.killNs == 0) bad << "victim never reached its kill\n";
  const int c = w.victimCompleted;
  info << "[fault] kill " << p.label() << ": victim completed " << c << "; wall " << w.wallSeconds
       << " s\n";
  // Over tcp a killed process's unread input makes the kernel reset the
  // connection, which may discard the last bytes it sent: one collective it
  // completed may still fail on its peers. Shared memory keeps what was written.
  const int lowest = c - (p.transport == Transport::Tcp ? 1 : 0);
  int failed = 0;
  for (int r = 0; r < p.nranks; ++r) {
    if (r == p.victim) continue;
    const auto& rr = w.ranks[r];
    if (!rr.reported || !rr.outcome.error.empty() || !rr.death.empty()) {
      bad << rr.describe(r) << "\n";
      continue;
    }
    Seen s;
    if (!Seen::decode(rr.outcome.report, &s)) {
      bad << "rank " << r << ": unreadable report '" << rr.outcome.report << "'\n";
      continue;
    }
    if (s.iter < 0) {
      info << "  rank " << r << ": completed all " << s.completed << " iterations; destroy "
           << rr.destroySeconds * 1000 << " ms\n";
      if (needsEveryone(p.kind)) {
        bad << "rank " << r << ": completed " << s.completed
            << " collectives although the victim died after " << c << "\n";
      }
      continue;
    }
    ++failed;
    info << "  rank " << r << ": iteration " << s.iter << " rc " << s.rc << " after " << s.callMs
         << " ms in the call, " << s.sinceFaultMs << " ms after the kill; destroy "
         << rr.destroySeconds * 1000
         << " ms; names victim: " << (names(s.message, p.victim) ? "yes" : "NO") << "; \""
         << excerpt(s.message) << "\"\n";
    const std::string problems = checkFailure(s, r, false, "");
    if (!problems.empty()) bad << "rank " << r << ": " << problems << excerpt(s.message) << "\n";
    // Over tcp a survivor's first news may be a link to another survivor
    // closing; the rank that died must still lead its message.
    if (!names(s.message, p.victim)) {
      bad << "rank " << r << " does not name the victim, rank " << p.victim << ": "
          << excerpt(s.message) << "\n";
    }
    if (s.iter < lowest) {
      bad << "rank " << r << ": failed at iteration " << s.iter << " but the victim completed " << c
          << "\n";
    }
    const int highest = p.mode == KillMode::Between ? c : c + 1;
    if (needsEveryone(p.kind) && s.iter > highest) {
      bad << "rank " << r << ": iteration " << s.iter
          << " succeeded past the victim's last, which it needs (victim completed " << c << ")\n";
    }
  }
  if (failed == 0) bad << "no survivor noticed the death\n";
  *summary = info.str();
  return bad.str();
}

/// Runs every plan's world at once (with `env` on every rank) and checks each.
void runKillPlans(const std::vector<KillPlan>& plans,
                  const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<WorldSpec> specs;
  std::vector<FaultBody> bodies;
  for (const KillPlan& p : plans) {
    specs.push_back(world(p.label(), p.nranks, p.transport));
    specs.back().env = env;
    bodies.push_back(killBody(p));
  }
  const auto results = runWorlds(specs, bodies, 40);
  for (size_t i = 0; i < plans.size(); ++i) {
    std::string summary;
    const std::string bad = checkKillWorld(plans[i], results[i], &summary);
    std::cout << summary;
    EXPECT_EQ(bad, "") << plans[i].label();
  }
}

class FaultKill : public testing::TestWithParam<Kind> {};

TEST_P(FaultKill, SurvivorsGetRemoteError) {
  const Kind kind = GetParam();
  std::vector<KillPlan> plans;
  for (int rep = 0; rep < repeats(); ++rep) {
    for (Transport t : {Transport::Shm, Transport::Tcp}) {
      const uint64_t seed =
          mixSeed(baseSeed(), static_cast<uint64_t>(kind) * 1000 + rep * 10 + static_cast<int>(t));
      plans.push_back(makeKillPlan(kind, t, seed));
    }
  }
  runKillPlans(plans, {});
}

INSTANTIATE_TEST_SUITE_P(Fault, FaultKill, testing::ValuesIn(kAllKinds),
                         [](const testing::TestParamInfo<Kind>& info) {
                           return std::string(kindName(info.param));
                         });

/// Kill plans inside every single-copy collective (Mid: where the reads are),
/// `repeats()` of each, seeds from `seedBase`.
std::vector<KillPlan> midSingleCopyPlans(uint64_t seedBase) {
  const Kind kinds[] = {Kind::AllReduceLarge, Kind::AllGather, Kind::ReduceScatter, Kind::Broadcast,
                        Kind::Reduce};
  std::vector<KillPlan> plans;
  for (int rep = 0; rep < repeats(); ++rep) {
    for (Kind kind : kinds) {
      const uint64_t seed = mixSeed(baseSeed(), seedBase + static_cast<uint64_t>(kind) * 10 + rep);
      KillPlan p = makeKillPlan(kind, Transport::Shm, seed);
      p.mode = KillMode::Mid;
      plans.push_back(p);
    }
  }
  return plans;
}

// A rank killed while its peers read its buffers in place (single-copy rounds
// with cross-memory attach): every survivor gets a RemoteError naming the
// victim, none crashes, and no survivor completes a call with what it read
// from a process that is gone. Mid-call kills of the large kinds land in
// the middle of process_vm_readv loops.
TEST(FaultKillSingleCopy, SurvivorsGetRemoteErrorNotACrash) {
  runKillPlans(midSingleCopyPlans(77000), {{"LOOM_CMA", "1"}, {"LOOM_SINGLE_COPY_MIN", "64K"}});
}

// The same with every rank's buffers from loomMemAlloc, registered, and no
// cross-memory attach: survivors read the victim's pages through their own
// mappings, which outlive it, so a kill mid-read must end in a RemoteError
// naming the victim, never in a crash or a completed call.
TEST(FaultKillSharedBuffers, SurvivorsGetRemoteErrorNotACrash) {
  runKillPlans(
      midSingleCopyPlans(78000),
      {{"LOOM_CMA", "0"}, {"LOOM_SINGLE_COPY_MIN", "64K"}, {"LOOMTEST_SHARED_BUFFERS", "all"}});
}

// --- 2. stall --------------------------------------------------------------------------

TEST(FaultStall, WaitersTimeOutNamingPeerAndCollective) {
  struct StallPlan {
    uint64_t seed;
    Kind kind;
    Transport transport;
    int nranks, staller, stallAt, cap;
    std::string label() const {
      std::ostringstream out;
      out << kindName(kind) << "/" << transportName(transport) << " seed=0x" << std::hex << seed
          << std::dec << " n=" << nranks << " staller=" << staller << " at " << stallAt;
      return out.str();
    }
  };
  std::vector<StallPlan> plans;
  for (int rep = 0; rep < 2 * repeats(); ++rep) {
    for (Transport t : {Transport::Shm, Transport::Tcp}) {
      const uint64_t seed = mixSeed(baseSeed() + 2, rep * 10 + static_cast<int>(t));
      std::mt19937_64 rng(seed);
      StallPlan p{};
      p.seed = seed;
      p.kind = kAllKinds[rng() % std::size(kAllKinds)];
      p.transport = t;
      p.nranks = 3 + static_cast<int>(rng() % 2);
      p.staller = static_cast<int>(rng() % p.nranks);
      p.stallAt = static_cast<int>(rng() % 11);
      p.cap = p.stallAt + 1;
      plans.push_back(p);
    }
  }
  std::vector<WorldSpec> specs;
  std::vector<FaultBody> bodies;
  for (const StallPlan& p : plans) {
    WorldSpec w = world(p.label(), p.nranks, p.transport);
    w.expendable = {p.staller};
    specs.push_back(w);
    bodies.push_back([p](FaultContext& ctx) {
      Buffers b(p.kind, ctx.rank, ctx.nranks);
      RankOutcome out;
      if (ctx.rank == p.staller) {
        for (int iter = 0; iter < p.stallAt; ++iter) {
          if (runKind(p.kind, iter, ctx.rank, ctx.nranks, ctx.comm, b) != loomSuccess) {
            out.error = "staller's iteration failed: " + std::string(loomGetLastError(ctx.comm));
            return out;
          }
        }
        ctx.shared->killNs.store(monotonicNs());
        sleepMs(30000);  // the launcher kills it once the others are done
        return out;
      }
      const Seen s = runUntilFailure(p.kind, p.cap, p.cap, ctx, b, ctx.shared->killNs);
      survivorBarrier(ctx, ctx.nranks - 1);
      out.report = s.encode();
      return out;
    });
  }
  const auto results = runWorlds(specs, bodies, 40);
  for (size_t i = 0; i < plans.size(); ++i) {
    const StallPlan& p = plans[i];
    const WorldResult& w = results[i];
    std::cout << "[fault] stall " << p.label() << ": wall " << w.wallSeconds << " s\n";
    for (int r = 0; r < p.nranks; ++r) {
      if (r == p.staller) continue;
      const auto& rr = w.ranks[r];
      if (!rr.reported || !rr.outcome.error.empty() || !rr.death.empty()) {
        ADD_FAILURE() << p.label() << ": " << rr.describe(r);
        continue;
      }
      Seen s;
      ASSERT_TRUE(Seen::decode(rr.outcome.report, &s)) << rr.outcome.report;
      if (s.iter < 0) {
        // Only a rooted collective can finish without the staller's part.
        EXPECT_FALSE(needsEveryone(p.kind)) << p.label() << ": rank " << r << " finished";
        std::cout << "  rank " << r << ": finished without the staller\n";
        continue;
      }
      std::cout << "  rank " << r << ": iteration " << s.iter << " after " << s.callMs
                << " ms; destroy " << rr.destroySeconds * 1000
                << " ms; names staller: " << (names(s.message, p.staller) ? "yes" : "NO") << "; \""
                << excerpt(s.message) << "\"\n";
      EXPECT_EQ(s.iter, p.stallAt) << p.label() << ": rank " << r;
      EXPECT_EQ(checkFailure(s, r, true, labelName(p.kind)), "")
          << p.label() << ": rank " << r << ": " << s.message;
      // All ranks share this host, so the hang report shows what the staller was doing.
      EXPECT_NE(s.message.find("rank " + std::to_string(p.staller) + " not in a call"),
                std::string::npos)
          << p.label() << ": rank " << r << ": " << s.message;
      // It waited LOOM_TIMEOUT, not less.
      EXPECT_GE(s.callMs, kTimeout * 1000.0 - 50) << p.label() << ": rank " << r;
    }
    if (needsEveryone(p.kind)) {
      // Someone waits for the staller itself and must say so.
      bool anyNames = false;
      for (int r = 0; r < p.nranks; ++r) {
        Seen s;
        if (r != p.staller && Seen::decode(w.ranks[r].outcome.report, &s)) {
          anyNames |= names(s.message, p.staller);
        }
      }
      EXPECT_TRUE(anyNames) << p.label() << ": no waiter names the staller";
    }
  }
}

// --- 3. closed connections ---------------------------------------------------------------

/// Shuts down and closes every socket of this process.
int closeAllSockets() {
  std::vector<int> fds;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int fd = std::atoi(e->d_name);
      struct stat st;
      if (fd != ::dirfd(dir) && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) fds.push_back(fd);
    }
    ::closedir(dir);
  }
  for (int fd : fds) {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  return static_cast<int>(fds.size());
}

TEST(FaultClose, PeersGetRemoteErrorNamingTheCloser) {
  struct ClosePlan {
    uint64_t seed;
    Kind kind;
    int nranks, closer, closeAt, cap;
    std::string label() const {
      std::ostringstream out;
      out << kindName(kind) << "/tcp seed=0x" << std::hex << seed << std::dec << " n=" << nranks
          << " closer=" << closer << " at " << closeAt;
      return out.str();
    }
  };
  std::vector<ClosePlan> plans;
  for (int rep = 0; rep < 3 * repeats(); ++rep) {
    const uint64_t seed = mixSeed(baseSeed() + 3, rep);
    std::mt19937_64 rng(seed);
    ClosePlan p{};
    p.seed = seed;
    p.kind = kAllKinds[rng() % std::size(kAllKinds)];
    p.nranks = 3 + static_cast<int>(rng() % 2);
    p.closer = static_cast<int>(rng() % p.nranks);
    p.closeAt = static_cast<int>(rng() % 11);
    p.cap = p.closeAt + 2 * p.nranks + 2;
    plans.push_back(p);
  }
  std::vector<WorldSpec> specs;
  std::vector<FaultBody> bodies;
  for (const ClosePlan& p : plans) {
    WorldSpec w = world(p.label(), p.nranks, Transport::Tcp);
    w.expendable = {p.closer};
    specs.push_back(w);
    bodies.push_back([p](FaultContext& ctx) {
      Buffers b(p.kind, ctx.rank, ctx.nranks);
      RankOutcome out;
      if (ctx.rank == p.closer) {
        for (int iter = 0; iter < p.closeAt; ++iter) {
          if (runKind(p.kind, iter, ctx.rank, ctx.nranks, ctx.comm, b) != loomSuccess) {
            out.error = "closer's iteration failed: " + std::string(loomGetLastError(ctx.comm));
            return out;
          }
        }
        ctx.shared->killNs.store(monotonicNs());
        const int closed = closeAllSockets();
        ctx.shared->victimCompleted.store(closed);  // reused: how many sockets it closed
        sleepMs(30000);
        return out;
      }
      const Seen s = runUntilFailure(p.kind, p.cap, p.cap, ctx, b, ctx.shared->killNs);
      survivorBarrier(ctx, ctx.nranks - 1);
      out.report = s.encode();
      return out;
    });
  }
  const auto results = runWorlds(specs, bodies, 40);
  for (size_t i = 0; i < plans.size(); ++i) {
    const ClosePlan& p = plans[i];
    const WorldResult& w = results[i];
    std::cout << "[fault] close " << p.label() << ": " << w.victimCompleted
              << " sockets closed; wall " << w.wallSeconds << " s\n";
    EXPECT_GT(w.victimCompleted, 0) << p.label() << ": the closer found no socket";
    bool anyNames = false;
    int failed = 0;
    for (int r = 0; r < p.nranks; ++r) {
      if (r == p.closer) continue;
      const auto& rr = w.ranks[r];
      if (!rr.reported || !rr.outcome.error.empty() || !rr.death.empty()) {
        ADD_FAILURE() << p.label() << ": " << rr.describe(r);
        continue;
      }
      Seen s;
      ASSERT_TRUE(Seen::decode(rr.outcome.report, &s)) << rr.outcome.report;
      if (s.iter < 0) {
        EXPECT_FALSE(needsEveryone(p.kind)) << p.label() << ": rank " << r << " finished";
        std::cout << "  rank " << r << ": finished all " << p.cap << " iterations\n";
        continue;
      }
      ++failed;
      anyNames |= names(s.message, p.closer);
      std::cout << "  rank " << r << ": iteration " << s.iter << " after " << s.callMs
                << " ms in the call, " << s.sinceFaultMs << " ms after the close; names closer: "
                << (names(s.message, p.closer) ? "yes" : "NO") << "; \"" << excerpt(s.message)
                << "\"\n";
      EXPECT_EQ(checkFailure(s, r, false, ""), "")
          << p.label() << ": rank " << r << ": " << s.message;
      EXPECT_GE(s.iter, p.closeAt - 1) << p.label() << ": rank " << r;
      if (needsEveryone(p.kind)) {
        EXPECT_EQ(s.iter, p.closeAt) << p.label() << ": rank " << r;
      }
    }
    EXPECT_GT(failed, 0) << p.label();
    EXPECT_TRUE(anyNames) << p.label() << ": no survivor names the closer";
  }
}

// --- 4. abort ---------------------------------------------------------------------------

TEST(FaultAbort, AbortEndsWaitWithAborted) {
  struct AbortPlan {
    uint64_t seed;
    Kind kind;
    Transport transport;
    int nranks, staller, aborter, stallAt;
    std::string label() const {
      std::ostringstream out;
      out << kindName(kind) << "/" << transportName(transport) << " seed=0x" << std::hex << seed
          << std::dec << " n=" << nranks << " staller=" << staller << " aborter=" << aborter
          << " at " << stallAt;
      return out.str();
    }
  };
  const Kind waitingKinds[] = {Kind::AllReduceSmall, Kind::AllReduceLarge, Kind::AllGather,
                               Kind::ReduceScatter,  Kind::AllToAll,       Kind::SendRecv};
  std::vector<AbortPlan> plans;
  for (int rep = 0; rep < 2 * repeats(); ++rep) {
    for (Transport t : {Transport::Shm, Transport::Tcp}) {
      const uint64_t seed = mixSeed(baseSeed() + 4, rep * 10 + static_cast<int>(t));
      std::mt19937_64 rng(seed);
      AbortPlan p{};
      p.seed = seed;
      p.kind = waitingKinds[rng() % std::size(waitingKinds)];
      p.transport = t;
      p.nranks = 3 + static_cast<int>(rng() % 2);
      p.staller = static_cast<int>(rng() % p.nranks);
      p.aborter = (p.staller + 1 + static_cast<int>(rng() % (p.nranks - 1))) % p.nranks;
      p.stallAt = static_cast<int>(rng() % 6);
      // The first round always covers a grouped send/recv (loomGroupEnd).
      if (rep == 0) p.kind = Kind::SendRecv;
      plans.push_back(p);
    }
  }
  std::vector<WorldSpec> specs;
  std::vector<FaultBody> bodies;
  for (const AbortPlan& p : plans) {
    WorldSpec w = world(p.label(), p.nranks, p.transport);
    w.expendable = {p.staller};
    specs.push_back(w);
    bodies.push_back([p](FaultContext& ctx) {
      Buffers b(p.kind, ctx.rank, ctx.nranks);
      RankOutcome out;
      for (int iter = 0; iter < p.stallAt; ++iter) {
        if (runKind(p.kind, iter, ctx.rank, ctx.nranks, ctx.comm, b) != loomSuccess) {
          out.error =
              "iteration failed before the stall: " + std::string(loomGetLastError(ctx.comm));
          return out;
        }
      }
      if (ctx.rank == p.staller) {
        sleepMs(30000);
        return out;
      }
      if (ctx.rank != p.aborter) {
        // A bystander: its peer stalls, and later the aborter's comm goes away
        // (its connections close, or it simply never answers). Either way this
        // is a remote error within LOOM_TIMEOUT + 1 s.
        Seen s;
        const int64_t start = monotonicNs();
        s.rc = runKind(p.kind, p.stallAt, ctx.rank, ctx.nranks, ctx.comm, b);
        s.callMs = msSince(start);
        s.sinceFaultMs = s.callMs;  // the stall began before this call
        s.iter = p.stallAt;
        s.message = loomGetLastError(ctx.comm);
        loomResult_t async = loomNumResults;
        if (loomCommGetAsyncError(ctx.comm, &async) != loomSuccess) async = loomNumResults;
        s.async = async;
        out.report = s.encode();
        out.error = checkFailure(s, ctx.rank, false, "");
        if (!out.error.empty()) out.error += s.message;
        return out;
      }
      std::atomic<bool> entered{false};
      std::atomic<int64_t> abortNs{0};
      loomResult_t abortRc = loomNumResults;
      double abortMs = -1;
      loomComm_t comm = ctx.comm;
      std::thread aborter([&] {
        while (!entered.load()) sleepMs(1);
        sleepMs(200);
        abortNs.store(monotonicNs());
        abortRc = loomCommAbort(comm);
        abortMs = msSince(abortNs.load());
      });
      const int64_t start = monotonicNs();
      entered.store(true);
      const loomResult_t rc = runKind(p.kind, p.stallAt, ctx.rank, ctx.nranks, comm, b);
      const double callMs = msSince(start);
      const double afterAbortMs = abortNs.load() != 0 ? msSince(abortNs.load()) : -1;
      const std::string message = loomGetLastError(nullptr);
      aborter.join();
      ctx.comm = nullptr;  // loomCommAbort freed it
      char line[200];
      std::snprintf(line, sizeof line,
                    "call %.1f ms, returned %.1f ms after the abort began; abort took %.1f ms",
                    callMs, afterAbortMs, abortMs);
      out.report = std::string(line) + "; \"" + excerpt(message) + "\"";
      if (rc != loomAborted) {
        out.error += "collective returned " + std::to_string(rc) + " (" + loomGetErrorString(rc) +
                     "), expected loomAborted: " + message + "; ";
      }
      if (message.find("abort") == std::string::npos) out.error += "message lacks 'abort'; ";
      if (abortRc != loomSuccess) {
        out.error += "loomCommAbort returned " + std::to_string(abortRc) + "; ";
      }
      if (afterAbortMs < 0 || afterAbortMs > 1000) out.error += "not promptly after the abort; ";
      if (callMs > kTimeout * 1000.0 / 2) out.error += "not well before LOOM_TIMEOUT; ";
      return out;
    });
  }
  const auto results = runWorlds(specs, bodies, 30);
  for (size_t i = 0; i < plans.size(); ++i) {
    const AbortPlan& p = plans[i];
    std::cout << "[fault] abort " << p.label() << "\n";
    for (int r = 0; r < p.nranks; ++r) {
      if (r == p.staller) continue;
      const auto& rr = results[i].ranks[r];
      Seen s;
      if (r != p.aborter && Seen::decode(rr.outcome.report, &s)) {
        std::cout << "  rank " << r << " (bystander): rc " << s.rc << " after " << s.callMs
                  << " ms; destroy " << rr.destroySeconds * 1000 << " ms; \"" << excerpt(s.message)
                  << "\"\n";
      } else {
        std::cout << "  rank " << r << " (aborter): " << rr.outcome.report << "\n";
      }
      EXPECT_TRUE(rr.reported && rr.outcome.error.empty() && rr.death.empty())
          << p.label() << ": " << rr.describe(r);
    }
  }
}

// --- 5. bootstrap strangers ----------------------------------------------------------------

enum class Attack { Silent, Garbage, WrongSecret, PartialHello, Crowd };

const char* attackName(Attack a) {
  switch (a) {
    case Attack::Silent:
      return "silent";
    case Attack::Garbage:
      return "garbage";
    case Attack::WrongSecret:
      return "wrong-secret";
    case Attack::PartialHello:
      return "partial-hello";
    case Attack::Crowd:
      return "crowd";
  }
  return "?";
}

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

/// Connects to 127.0.0.1:port, retrying until something listens or `done`.
int connectRetrying(int port, const std::atomic<bool>& done, int64_t untilNs) {
  while (!done.load() && monotonicNs() < untilNs) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return -1;
}

/// A forged rendezvous hello as documented in src/bootstrap/rendezvous_protocol.h
/// (version 4): magic "LOOMBS04", job u64, nonce[16], then `mac32` where the MAC
/// of the server's challenge belongs, rank, nranks, pid and host length as
/// little-endian u32, and 64 bytes of host.
std::string helloBytes(const std::string& mac32, uint32_t rank, uint32_t nranks) {
  std::string h = "LOOMBS04" + std::string(8 + 16, '\x5a') + mac32;
  for (uint32_t v : {rank, nranks, 1234u, 0u}) {
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  return h + std::string(64, '\0');
}

std::string randomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

/// Runs one attack against the port until the world is done (or 8 s).
void attack(Attack kind, int port, int nranks, uint64_t seed, const std::atomic<bool>& done) {
  std::mt19937_64 rng(seed);
  const int64_t until = monotonicNs() + int64_t{8} * 1000000000;
  std::vector<int> fds;
  const int connections = kind == Attack::Crowd ? 64 : 3;
  for (int i = 0; i < connections && !done.load(); ++i) {
    const int fd = connectRetrying(port, done, until);
    if (fd < 0) break;
    fds.push_back(fd);
    std::string bytes;
    switch (kind) {
      case Attack::Silent:
      case Attack::Crowd:
        break;
      case Attack::Garbage:
        bytes = randomBytes(rng, 1 + rng() % 4096);
        break;
      case Attack::WrongSecret:
        bytes = helloBytes(randomBytes(rng, 32), static_cast<uint32_t>(rng() % nranks),
                           static_cast<uint32_t>(nranks));
        break;
      case Attack::PartialHello:
        bytes = helloBytes(randomBytes(rng, 32), 0, static_cast<uint32_t>(nranks))
                    .substr(0, 1 + rng() % 143);
        break;
    }
    if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // Hold every connection open (reading and dropping replies) until the end.
  while (!done.load() && monotonicNs() < until) {
    for (int fd : fds) {
      char sink[256];
      (void)::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int fd : fds) ::close(fd);
}

TEST(FaultBootstrap, StrangersDoNotBreakInit) {
  struct BootPlan {
    uint64_t seed;
    Attack attack;
    Transport transport;
    int nranks, port;
    std::string label() const {
      std::ostringstream out;
      out << attackName(attack) << "/" << transportName(transport) << " seed=0x" << std::hex << seed
          << std::dec << " n=" << nranks << " port " << port;
      return out.str();
    }
  };
  std::vector<BootPlan> plans;
  const Attack attacks[] = {Attack::Silent, Attack::Garbage, Attack::WrongSecret,
                            Attack::PartialHello, Attack::Crowd};
  for (int rep = 0; rep < repeats(); ++rep) {
    for (Attack a : attacks) {
      const uint64_t seed = mixSeed(baseSeed() + 5, rep * 10 + static_cast<int>(a));
      std::mt19937_64 rng(seed);
      BootPlan p{};
      p.seed = seed;
      p.attack = a;
      p.transport = rng() % 2 == 0 ? Transport::Shm : Transport::Tcp;
      p.nranks = 3 + static_cast<int>(rng() % 2);
      p.port = freePort();
      ASSERT_GT(p.port, 0);
      plans.push_back(p);
    }
  }
  std::vector<WorldSpec> specs;
  std::vector<FaultBody> bodies;
  for (const BootPlan& p : plans) {
    WorldSpec w = world(p.label(), p.nranks, p.transport);
    w.commId = "127.0.0.1:" + std::to_string(p.port);
    w.secret = "fault-test-secret-0123456789abcdef-" + std::to_string(p.seed);
    // Rank 0 (the server) starts after the strangers began knocking; the
    // others straggle in after it.
    const uint64_t seed = p.seed;
    w.beforeInit = [seed](int rank) {
      std::mt19937_64 rng(mixSeed(seed, rank));
      sleepMs(rank == 0 ? 30 + static_cast<int>(rng() % 30) : static_cast<int>(rng() % 120));
    };
    specs.push_back(w);
    bodies.push_back([](FaultContext& ctx) {
      RankOutcome out;
      int32_t x = ctx.rank + 1;
      const loomResult_t rc = loomAllReduce(&x, &x, 1, loomInt32, loomSum, ctx.comm, nullptr);
      if (rc != loomSuccess) {
        out.error = std::string("all-reduce after init: ") + loomGetLastError(ctx.comm);
      } else if (x != ctx.nranks * (ctx.nranks + 1) / 2) {
        out.error = "all-reduce after init gave " + std::to_string(x);
      }
      return out;
    });
  }
  const auto results = runWorlds(specs, bodies, 30, [&](const std::atomic<bool>& done) {
    std::vector<std::thread> attackers;
    for (const BootPlan& p : plans) {
      attackers.emplace_back(attack, p.attack, p.port, p.nranks, p.seed, std::cref(done));
    }
    for (auto& t : attackers) t.join();
  });
  for (size_t i = 0; i < plans.size(); ++i) {
    const BootPlan& p = plans[i];
    std::cout << "[fault] bootstrap " << p.label() << ": init";
    for (int r = 0; r < p.nranks; ++r) {
      const auto& rr = results[i].ranks[r];
      std::cout << " " << rr.initSeconds * 1000 << " ms";
      EXPECT_TRUE(rr.reported && rr.outcome.error.empty() && rr.death.empty())
          << p.label() << ": " << rr.describe(r);
      EXPECT_LT(rr.initSeconds, kTimeout) << p.label() << ": rank " << r;
    }
    std::cout << "\n";
  }
}

}  // namespace
}  // namespace loomtest
