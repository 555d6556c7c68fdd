// Starting one rank: fork, set the child up, exec, and learn whether exec
// worked before moving on.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "core_binding.h"
#include "unique_fd.h"

namespace loomrun {

struct SpawnRequest {
  std::vector<std::string> command;
  std::vector<std::string> environment;  // complete "NAME=value" list
  /// Pipe stdout and stderr back to loomrun (for --tag-output) instead of
  /// letting the rank write to loomrun's own stdout and stderr.
  bool captureOutput = false;
  /// Replaces stdin when valid; otherwise the rank shares loomrun's stdin.
  int stdinFd = -1;
  sigset_t signalMask;  // the mask to exec with
  /// The CPUs the rank runs on (core_binding.h); empty: loomrun's own.
  CpuMask cpus;
};

struct SpawnedRank {
  pid_t pid = -1;
  /// Non-zero when exec failed; the child has then already exited (unreaped).
  int execErrno = 0;
  UniqueFd stdoutPipe;  // read ends, valid only with captureOutput
  UniqueFd stderrPipe;
};

/// The rank runs as the leader of its own process group, so loomrun can
/// signal everything it spawned with kill(-pid, sig), and dies with SIGKILL if
/// loomrun dies. Throws std::system_error when pipe or fork fails.
SpawnedRank spawnRank(const SpawnRequest& request);

}  // namespace loomrun
