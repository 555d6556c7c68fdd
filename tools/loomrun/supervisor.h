// Runs the ranks of one job to completion: spawns them, relays their output,
// forwards signals, and turns the first failure, a timeout or an exec error
// into loomrun's exit status. Every child is reaped before run() returns.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core_binding.h"
#include "line_tagger.h"
#include "options.h"
#include "signal_watch.h"
#include "unique_fd.h"

namespace loomrun {

class Supervisor {
 public:
  /// `environments[i]` is rank i's complete environment and `cpus[i]` its
  /// CPUs (both kept for replacements); `cpus` empty: ranks are not bound.
  Supervisor(const Options& options, SignalWatch& signals,
             std::vector<std::vector<std::string>> environments, std::vector<CpuMask> cpus);

  /// Returns loomrun's exit status: 0 when every rank exited 0; the first
  /// failing rank's code (128+signal when killed); with --keep-going the last
  /// rank's instead; 124 on --timeout; 126/127 when the program cannot be
  /// executed; 1 when a rank cannot be started.
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  struct Stream {
    UniqueFd pipe;
    LineTagger tagger;
    int target;  // loomrun's fd the tagged lines go to
  };
  struct Rank {
    int index = 0;
    pid_t pid = -1;
    bool running = false;
    std::vector<Stream> streams;  // stdout, stderr; empty without --tag-output
  };

  void spawnAll();
  /// Starts `rank` with `environment`; false (and termination begun) when it
  /// cannot be started or its program cannot be executed.
  bool spawn(Rank& rank, std::vector<std::string> environment, int stdinFd);
  /// --respawn: starts a replacement for the failed `rank`.
  void respawn(const Rank& rank);
  void loop();
  void handleSignals();
  void reapExited();
  void onExit(Rank& rank, int status);
  void reportFailure(const Rank& rank, int status);
  void pump(Stream& stream);
  void drainOutput();
  void writeOut(int fd, const std::string& text);
  void beginTermination();
  void signalRunning(int sig);
  void checkDeadlines();
  int pollTimeoutMs() const;
  bool anyRunning() const;

  const Options& options_;
  SignalWatch& signals_;
  std::vector<std::vector<std::string>> environments_;
  std::vector<CpuMask> cpus_;
  std::deque<Rank> ranks_;  // grows with replacements; references stay valid
  int respawnsLeft_ = 0;
  UniqueFd devNull_;

  std::optional<Clock::time_point> jobDeadline_;
  std::optional<Clock::time_point> killDeadline_;  // SIGKILL stragglers then
  bool terminating_ = false;
  bool timedOut_ = false;
  std::optional<int> exitCode_;                // first failure's status, or an early error's
  int lastExitCode_ = 0;                       // --keep-going: the last rank to finish
  bool brokenOut_[3] = {false, false, false};  // per target fd: reader went away
};

}  // namespace loomrun
