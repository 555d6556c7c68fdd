// Runs N ranks of a test body, either as threads of this process
// (loomCommInitAll) or as forked child processes (loomCommInitRank), over a
// chosen transport, and brings every rank's verdict back to the test.
//
// Bodies never use gtest assertions: in a child they would not reach the
// parent, and in a rank thread a fatal one would leave peers waiting. A body
// returns an error text instead (empty = passed) plus a free-form report
// (e.g. hashes of results) that the test compares across ranks.
#ifndef LOOM_TESTS_MULTIPROC_HARNESS_H_
#define LOOM_TESTS_MULTIPROC_HARNESS_H_

#include <chrono>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/loom.h"

namespace loomtest {

enum class Launch { Threads, Processes };
enum class Transport { Shm, Tcp };

const char* launchName(Launch launch);
const char* transportName(Transport transport);

/// What one rank's body hands back.
struct RankOutcome {
  std::string error;   ///< empty when the rank passed
  std::string report;  ///< compared across ranks by the test, never interpreted here
};

using RankBody = std::function<RankOutcome(int rank, int nranks, loomComm_t comm)>;

struct RunOptions {
  Launch launch = Launch::Threads;
  Transport transport = Transport::Shm;
  int nranks = 2;
  /// Extra environment for the ranks (LOOM_ALGO, LOOM_CHECK, ...), applied
  /// before the communicator is created. LOOM_TIMEOUT defaults to 30 s.
  std::vector<std::pair<std::string, std::string>> env;
  /// Wall-clock budget for the whole run; past it children are SIGKILLed and a
  /// thread run aborts the test binary (a stuck thread cannot be killed).
  int deadlineSeconds = 120;
};

/// Per-rank result as seen by the launcher.
struct RankResult {
  bool reported = false;  ///< the body ran to the end and its outcome arrived
  RankOutcome outcome;
  std::string death;  ///< why no outcome arrived (signal, exit code, deadline), if so
  bool ok() const { return reported && outcome.error.empty() && death.empty(); }
  /// One line for failure messages.
  std::string describe(int rank) const;
};

/// Runs `body` on every rank and returns what each rank reported. Init and
/// destroy failures are reported as that rank's error.
std::vector<RankResult> runRanks(const RunOptions& options, const RankBody& body);

/// "" if every rank passed, else one line per failing rank.
std::string failures(const std::vector<RankResult>& results);

/// An in-place float sum all-reduce of `values`, timed, with its error message.
struct TimedCall {
  loomResult_t rc = loomSuccess;
  std::string message;  ///< loomGetLastError when rc is not loomSuccess
  std::chrono::steady_clock::duration took{};
};
TimedCall timedAllReduce(loomComm_t comm, std::vector<float>& values);

/// "" if every rank's report equals rank 0's, else which rank differs.
std::string reportMismatch(const std::vector<RankResult>& results);

/// Sets environment variables for a scope and restores the previous values.
/// Tests in one binary run one after another, so the process-wide environment
/// is safe to change around loomCommInitAll.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars);
  /// Lets `ScopedEnv env({{"NAME", "value"}})` pick this over the copy constructor.
  explicit ScopedEnv(std::initializer_list<std::pair<std::string, std::string>> vars)
      : ScopedEnv(std::vector<std::pair<std::string, std::string>>(vars)) {}
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// The environment the ranks get: LOOM_TRANSPORT, LOOM_TIMEOUT=30 and `extra`.
std::vector<std::pair<std::string, std::string>> rankEnvironment(const RunOptions& options);

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_HARNESS_H_
