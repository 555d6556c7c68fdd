// The recovery battery: in worlds of 2 to 8 forked ranks over shm and tcp, a
// random rank is SIGKILLed at a random moment of a collective loop (between
// calls, or from a timer while a call runs). Every survivor must see the
// failure, shrink within seconds, and get every collective right on the
// shrunk communicator; in some worlds a second rank dies after the first
// failure, before shrinking, and must simply be left out; in some the
// survivors then grow back to full size with replacements (threads of the
// new rank 0's process) and check every collective again. Seeds are printed;
// LOOM_FAULT_SEED and LOOM_FAULT_REPEAT run others and more.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective_case.h"
#include "fault_harness.h"
#include "harness.h"

namespace loomtest {
namespace {

// Generous: 10 worlds of up to 8 ranks share 2 cores, and a shrink's window
// (one LOOM_TIMEOUT) only matters for a rank that never asks.
constexpr int kTimeoutSeconds = 10;
constexpr int kWorldsPerTest = 10;

uint64_t baseSeed() {
  const char* text = std::getenv("LOOM_FAULT_SEED");
  return text ? std::strtoull(text, nullptr, 0) : 0x5eed5eedull;
}

int repeats() {
  const char* text = std::getenv("LOOM_FAULT_REPEAT");
  const int n = text ? std::atoi(text) : 1;
  return n < 1 ? 1 : n;
}

struct ShrinkPlan {
  uint64_t seed = 0;
  Transport transport = Transport::Shm;
  int nranks = 2;
  int victim = 0;
  int killAt = 0;          ///< all-reduces the victim completes first
  bool fromTimer = false;  ///< killed by a timer thread while in a call
  int delayUs = 0;         ///< the timer's delay
  size_t count = 64;       ///< elements of the all-reduces (small, or over the direct limit)
  int secondVictim = -1;   ///< dies after the first failure, before shrinking; -1: none
  bool growBack = false;   ///< survivors grow back to nranks afterwards

  std::string label() const {
    std::ostringstream out;
    out << transportName(transport) << " seed=0x" << std::hex << seed << std::dec << " n=" << nranks
        << " victim=" << victim << (fromTimer ? " timer at " : " after ") << killAt
        << (fromTimer ? " + " + std::to_string(delayUs) + " us" : "") << " count=" << count
        << (secondVictim >= 0 ? " second=" + std::to_string(secondVictim) : "")
        << (growBack ? " grow" : "");
    return out.str();
  }
};

ShrinkPlan makePlan(Transport transport, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ShrinkPlan p;
  p.seed = seed;
  p.transport = transport;
  p.nranks = 2 + static_cast<int>(rng() % 7);
  p.victim = static_cast<int>(rng() % p.nranks);
  p.killAt = static_cast<int>(rng() % 31);
  p.fromTimer = rng() % 2 == 0;
  p.delayUs = static_cast<int>(rng() % 3001);
  p.count = rng() % 2 == 0 ? 64 : size_t{256} << 10;
  if (p.nranks >= 4 && rng() % 3 == 0) {
    p.secondVictim = static_cast<int>(rng() % p.nranks);
    if (p.secondVictim == p.victim) p.secondVictim = (p.victim + 1) % p.nranks;
  }
  p.growBack = rng() % 2 == 0;
  return p;
}

/// Runs one case of every collective on `comm` (odd count, rooted ones at
/// the last rank) and checks each against the reference; returns the errors.
std::string checkEveryCollective(loomComm_t comm, uint64_t seed) {
  int rank = 0;
  int nranks = 0;
  loomCommUserRank(comm, &rank);
  loomCommCount(comm, &nranks);
  std::string errors;
  for (Coll coll : {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter, Coll::Broadcast,
                    Coll::Reduce, Coll::AllToAll, Coll::Gather, Coll::Scatter, Coll::SendRecv}) {
    Case c;
    c.coll = coll;
    c.count = 1001;
    c.root = nranks - 1;
    c.seed = seed;
    const CaseResult result = runCase(c, rank, nranks, comm);
    if (!result.error.empty()) errors += caseName(c) + ": " + result.error + "; ";
    if (result.fatal) break;
  }
  return errors;
}

[[noreturn]] void dieNow(FaultShared* shared) {
  shared->killNs.store(monotonicNs());
  ::raise(SIGKILL);
  std::abort();  // not reached
}

/// Grows `comm` back to `nranks` with threads of this process as the new
/// ranks (only on its rank 0) and checks every collective on the result.
std::string growBack(loomComm_t comm, int nranks, uint64_t seed) {
  int rank = 0;
  int size = 0;
  loomCommUserRank(comm, &rank);
  loomCommCount(comm, &size);
  std::vector<std::thread> newcomers;
  std::vector<std::string> newErrors(static_cast<size_t>(nranks));
  if (rank == 0) {
    loomUniqueId id;
    if (loomCommGetUniqueId(comm, &id) != loomSuccess) {
      return std::string("loomCommGetUniqueId: ") + loomGetLastError(comm);
    }
    for (int r = size; r < nranks; ++r) {
      newcomers.emplace_back([&, r, id] {
        loomComm_t grown = nullptr;
        if (loomCommGrow(nullptr, nranks, &id, r, &grown) != loomSuccess) {
          newErrors[r] = "new rank " + std::to_string(r) + ": " + loomGetLastError(nullptr);
          return;
        }
        newErrors[r] = checkEveryCollective(grown, seed);
        loomCommDestroy(grown);
      });
    }
  }
  std::string errors;
  loomComm_t grown = nullptr;
  if (loomCommGrow(comm, nranks, nullptr, -1, &grown) != loomSuccess) {
    errors = std::string("grow: ") + loomGetLastError(comm);
  } else {
    errors = checkEveryCollective(grown, seed);
    loomCommDestroy(grown);
  }
  for (auto& t : newcomers) t.join();
  for (const std::string& e : newErrors) errors += e;
  return errors;
}

FaultBody shrinkBody(const ShrinkPlan& p) {
  return [p](FaultContext& ctx) {
    RankOutcome out;
    std::vector<float> v(p.count, 1.0f);
    if (ctx.rank == p.victim && p.fromTimer) {
      FaultShared* shared = ctx.shared;
      std::thread([shared, p] {
        std::this_thread::sleep_for(std::chrono::microseconds(p.delayUs));
        dieNow(shared);
      }).detach();
    }
    // Survivors stop a few calls after the death at the latest: with a small
    // count a call the victim finished may complete everywhere else.
    int limit = 1 << 20;
    loomResult_t rc = loomSuccess;
    for (int i = 0; i < limit && rc == loomSuccess; ++i) {
      if (ctx.rank == p.victim && !p.fromTimer && i == p.killAt) dieNow(ctx.shared);
      if (ctx.shared->killNs.load() != 0 && limit > i + 2 * p.nranks) limit = i + 2 * p.nranks;
      rc = loomAllReduce(v.data(), v.data(), v.size(), loomFloat32, loomSum, ctx.comm, nullptr);
    }
    if (ctx.rank == p.victim) {
      // A timer kill may land after the loop ended; wait for it.
      std::this_thread::sleep_for(std::chrono::seconds(30));
      out.error = "the victim outlived its timer";
      return out;
    }
    if (ctx.rank == p.secondVictim) dieNow(ctx.shared);

    const auto started = std::chrono::steady_clock::now();
    loomComm_t shrunk = nullptr;
    if (loomCommShrink(ctx.comm, nullptr, 0, &shrunk, LOOM_SHRINK_ABORT) != loomSuccess) {
      out.error = std::string("shrink: ") + loomGetLastError(ctx.comm);
      return out;
    }
    const double shrinkMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    const int dead = 1 + (p.secondVictim >= 0 ? 1 : 0);
    int expectedRank = ctx.rank - (p.victim < ctx.rank ? 1 : 0) -
                       (p.secondVictim >= 0 && p.secondVictim < ctx.rank ? 1 : 0);
    int rank = -1;
    int size = 0;
    loomCommUserRank(shrunk, &rank);
    loomCommCount(shrunk, &size);
    if (rank != expectedRank || size != ctx.nranks - dead) {
      out.error = "shrunk to rank " + std::to_string(rank) + " of " + std::to_string(size) +
                  ", expected " + std::to_string(expectedRank) + " of " +
                  std::to_string(ctx.nranks - dead) + "; ";
    }
    if (shrinkMs > 5000) out.error += "shrink took " + std::to_string(shrinkMs) + " ms; ";
    out.error += checkEveryCollective(shrunk, p.seed);
    if (p.growBack && out.error.empty()) out.error += growBack(shrunk, ctx.nranks, p.seed + 1);
    loomCommDestroy(shrunk);
    out.report = std::to_string(shrinkMs);
    return out;
  };
}

void runShrinkPlans(Transport transport, int salt) {
  std::vector<ShrinkPlan> plans;
  for (int i = 0; i < kWorldsPerTest * repeats(); ++i) {
    plans.push_back(makePlan(transport, baseSeed() * 31 + static_cast<uint64_t>(salt * 1000 + i)));
  }
  std::vector<WorldSpec> specs;
  std::vector<FaultBody> bodies;
  for (const ShrinkPlan& p : plans) {
    WorldSpec w;
    w.label = p.label();
    w.nranks = p.nranks;
    w.transport = p.transport;
    w.timeoutSeconds = kTimeoutSeconds;
    specs.push_back(w);
    bodies.push_back(shrinkBody(p));
  }
  const auto results = runWorlds(specs, bodies, 120);
  for (size_t i = 0; i < plans.size(); ++i) {
    const ShrinkPlan& p = plans[i];
    const WorldResult& w = results[i];
    std::ostringstream shrinkMs;
    for (int r = 0; r < p.nranks; ++r) {
      const FaultRankResult& rr = w.ranks[r];
      if (r == p.victim || r == p.secondVictim) {
        EXPECT_EQ(rr.signal, SIGKILL) << p.label() << ": " << rr.describe(r);
        continue;
      }
      EXPECT_TRUE(rr.reported && rr.outcome.error.empty() && rr.death.empty())
          << p.label() << ": " << rr.describe(r);
      shrinkMs << " " << rr.outcome.report;
    }
    std::cout << "[shrink] " << p.label() << ": shrink ms" << shrinkMs.str() << "\n";
  }
}

TEST(FaultShrink, SurvivorsShrinkAndGoOnOverShm) { runShrinkPlans(Transport::Shm, 1); }
TEST(FaultShrink, SurvivorsShrinkAndGoOnOverTcp) { runShrinkPlans(Transport::Tcp, 2); }

}  // namespace
}  // namespace loomtest
