#include "spawn_rank.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace loomrun {

namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// Both ends close on exec, so no rank inherits another rank's pipes (which
// would hold them open past that rank's exit). dup2 onto 1/2 clears the flag
// on the copies the child keeps.
Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec. loomrun is multithreaded (the
// rendezvous server), so only async-signal-safe calls are allowed here: no
// allocation, no locks, no stdio. Everything it needs was prepared before fork.
[[noreturn]] void becomeRank(pid_t parent, const SpawnRequest& request, char* const* argv,
                             char* const* envp, int stdoutFd, int stderrFd, int errnoFd) {
  ::setpgid(0, 0);
  // Dies with loomrun, even by SIGKILL. The death signal follows the parent
  // *thread*; loomrun forks from its main thread, which lives until exit.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // loomrun may have died before prctl took effect; then nobody would kill us.
  if (::getppid() != parent) ::_exit(127);
  if (request.stdinFd >= 0) ::dup2(request.stdinFd, STDIN_FILENO);
  if (stdoutFd >= 0) ::dup2(stdoutFd, STDOUT_FILENO);
  if (stderrFd >= 0) ::dup2(stderrFd, STDERR_FILENO);
  ::sigprocmask(SIG_SETMASK, &request.signalMask, nullptr);
  // A binding that fails (the CPUs were taken away since loomrun looked)
  // leaves the rank where loomrun runs: slower perhaps, never wrong.
  if (!request.cpus.empty()) {
    ::sched_setaffinity(0, request.cpus.size() * sizeof(unsigned long),
                        reinterpret_cast<const cpu_set_t*>(request.cpus.data()));
  }
  ::execvpe(argv[0], argv, envp);
  const int error = errno;
  // The pipe is close-on-exec: loomrun reads EOF on success, an errno here.
  (void)!::write(errnoFd, &error, sizeof error);
  ::_exit(127);
}

}  // namespace

SpawnedRank spawnRank(const SpawnRequest& request) {
  const std::vector<char*> argv = pointers(request.command);
  const std::vector<char*> envp = pointers(request.environment);
  Pipe out, err;
  if (request.captureOutput) {
    out = makePipe();
    err = makePipe();
  }
  Pipe execStatus = makePipe();

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    becomeRank(parent, request, argv.data(), envp.data(), out.write.get(), err.write.get(),
               execStatus.write.get());
  }

  // Also from this side, so the group exists before loomrun may signal it
  // (whichever of the two calls runs first wins; the other fails harmlessly).
  ::setpgid(pid, pid);
  out.write.reset();
  err.write.reset();
  execStatus.write.reset();

  SpawnedRank rank;
  rank.pid = pid;
  int error = 0;
  ssize_t n;
  do {
    n = ::read(execStatus.read.get(), &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof error)) rank.execErrno = error;
  rank.stdoutPipe = std::move(out.read);
  rank.stderrPipe = std::move(err.read);
  return rank;
}

}  // namespace loomrun
