// A launcher for fault-injection tests: several worlds of forked ranks at
// once, each with its own shared-memory page (kill time, victim progress) and
// with full control over init and destroy, which the ordinary harness hides.
//
// Like harness.h, bodies never use gtest assertions; they return an error
// text and a report that the test parses. Every child is bounded: past the
// run's deadline it is SIGKILLed, and ranks marked expendable (stallers) are
// SIGKILLed as soon as every other rank of their world has exited.
#ifndef LOOM_TESTS_MULTIPROC_FAULT_HARNESS_H_
#define LOOM_TESTS_MULTIPROC_FAULT_HARNESS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "loom/loom.h"

namespace loomtest {

/// Nanoseconds of CLOCK_MONOTONIC: comparable across the processes of one host.
int64_t monotonicNs();

/// One page shared by every rank of a world and the launcher.
struct FaultShared {
  std::atomic<int64_t> killNs{0};         ///< when the victim killed itself / went silent
  std::atomic<int> victimCompleted{0};    ///< collectives the victim completed
  std::atomic<int> survivorsDone{0};      ///< survivors past their last call (a barrier)
  std::atomic<int64_t> victimFaultNs{0};  ///< spare stamp (connections closed, ...)
};

struct WorldSpec {
  std::string label;  ///< names the world (seed, transport) in failure messages
  int nranks = 3;
  Transport transport = Transport::Shm;
  int timeoutSeconds = 3;  ///< LOOM_TIMEOUT
  std::vector<std::pair<std::string, std::string>> env;
  /// SIGKILLed by the launcher once every other rank of the world exited.
  std::vector<int> expendable;
  /// Empty: the launcher calls loomGetUniqueId and ranks use loomCommInitRank.
  /// Otherwise "host:port": ranks call loomCommInitFromEnv with LOOM_COMM_ID set
  /// to it, LOOM_SECRET = secret and LOOM_RANK / LOOM_WORLD_SIZE.
  std::string commId;
  std::string secret;
  /// Runs in each child before init (e.g. a random delay).
  std::function<void(int rank)> beforeInit;
};

struct FaultContext {
  int rank = 0;
  int nranks = 0;
  /// The body sets this to nullptr when it freed the comm itself (loomCommAbort).
  loomComm_t comm = nullptr;
  FaultShared* shared = nullptr;
  int timeoutSeconds = 3;
};

using FaultBody = std::function<RankOutcome(FaultContext& ctx)>;

struct FaultRankResult {
  bool reported = false;
  RankOutcome outcome;
  std::string death;      ///< why no outcome arrived (signal, exit code, deadline)
  int signal = 0;         ///< terminating signal, 0 if it exited
  bool expended = false;  ///< killed by the launcher as an expendable rank
  double initSeconds = -1;
  double destroySeconds = -1;  ///< -1: the body freed the comm or init failed
  std::string describe(int rank) const;
};

struct WorldResult {
  std::vector<FaultRankResult> ranks;
  int64_t killNs = 0;
  int victimCompleted = 0;
  int64_t victimFaultNs = 0;
  double wallSeconds = 0;
};

/// Forks every world's ranks at once and waits for all of them (bounded by
/// `deadlineSeconds`). After a successful body the child destroys the comm,
/// timing it; a destroy slower than LOOM_TIMEOUT + 1 s is that rank's error.
/// `duringRun` (optional) runs on a parent thread while the children run; the
/// flag it gets turns true once every child has exited, and it must then return.
std::vector<WorldResult> runWorlds(
    const std::vector<WorldSpec>& specs, const std::vector<FaultBody>& bodies, int deadlineSeconds,
    const std::function<void(const std::atomic<bool>& childrenDone)>& duringRun = {});

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_FAULT_HARNESS_H_
