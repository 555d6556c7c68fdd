#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <vector>

#include "spawn_rank.h"

namespace loomrun {

namespace {

// How long ranks get to exit after SIGTERM before they are killed outright.
constexpr auto kTermGrace = std::chrono::seconds(5);

int statusCode(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

Supervisor::Supervisor(const Options& options, SignalWatch& signals,
                       std::vector<std::vector<std::string>> environments,
                       std::vector<CpuMask> cpus)
    : options_(options),
      signals_(signals),
      environments_(std::move(environments)),
      cpus_(std::move(cpus)) {}

int Supervisor::run() {
  if (options_.timeoutSeconds) {
    jobDeadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(*options_.timeoutSeconds));
  }
  spawnAll();
  loop();
  drainOutput();
  if (timedOut_) return 124;
  // Only an early error (a rank that could not start) ends a --keep-going
  // job: otherwise ranks that go on decide how it ends.
  if (options_.keepGoing && !terminating_) return lastExitCode_;
  return exitCode_.value_or(0);
}

void Supervisor::spawnAll() {
  // A terminal stdin cannot be shared: the ranks run in their own process
  // groups, and a background group reading the terminal is stopped (SIGTTIN).
  // Rank 0 gets a piped or redirected stdin, like mpirun; everyone else reads
  // /dev/null.
  devNull_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const bool shareStdin = !::isatty(STDIN_FILENO);

  respawnsLeft_ = options_.respawn;
  ranks_.resize(options_.nranks);
  for (int i = 0; i < options_.nranks; ++i) {
    Rank& rank = ranks_[i];
    rank.index = i;
    // The ranks already started are reaped by the loop.
    if (!spawn(rank, environments_[i], (i == 0 && shareStdin) ? -1 : devNull_.get())) return;
  }
}

bool Supervisor::spawn(Rank& rank, std::vector<std::string> environment, int stdinFd) {
  SpawnRequest request;
  request.command = options_.command;
  request.environment = std::move(environment);
  request.captureOutput = options_.tagOutput;
  request.stdinFd = stdinFd;
  request.signalMask = signals_.originalMask();
  if (!cpus_.empty()) request.cpus = cpus_[static_cast<size_t>(rank.index)];
  SpawnedRank spawned;
  try {
    spawned = spawnRank(request);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "loomrun: cannot start rank %d: %s\n", rank.index, e.what());
    exitCode_ = 1;
    beginTermination();
    return false;
  }
  rank.pid = spawned.pid;
  rank.running = true;
  if (spawned.execErrno != 0) {
    // Every rank runs the same program, so one failed exec dooms them all.
    std::fprintf(stderr, "loomrun: cannot run '%s': %s\n", options_.command[0].c_str(),
                 std::strerror(spawned.execErrno));
    exitCode_ = spawned.execErrno == ENOENT ? 127 : 126;
    beginTermination();
    return false;
  }
  if (options_.tagOutput) {
    rank.streams.push_back({std::move(spawned.stdoutPipe), LineTagger(rank.index), STDOUT_FILENO});
    rank.streams.push_back({std::move(spawned.stderrPipe), LineTagger(rank.index), STDERR_FILENO});
  }
  return true;
}

void Supervisor::respawn(const Rank& failed) {
  --respawnsLeft_;
  std::fprintf(stderr, "loomrun: --respawn: starting a replacement for rank %d (%d more allowed)\n",
               failed.index, respawnsLeft_);
  std::vector<std::string> environment = environments_[static_cast<size_t>(failed.index)];
  environment.push_back("LOOM_REPLACEMENT=1");
  // Output is tagged with the failed rank's number: the replacement takes its place.
  Rank& replacement = ranks_.emplace_back();
  replacement.index = failed.index;
  spawn(replacement, std::move(environment), devNull_.get());
}

void Supervisor::loop() {
  std::vector<pollfd> fds;
  std::vector<Stream*> streamOf;  // parallel to fds[1..]
  while (anyRunning()) {
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    streamOf.assign(1, nullptr);
    for (auto& rank : ranks_) {
      for (auto& stream : rank.streams) {
        if (!stream.pipe.valid()) continue;
        fds.push_back(pollfd{stream.pipe.get(), POLLIN, 0});
        streamOf.push_back(&stream);
      }
    }
    const int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs());
    if (ready < 0 && errno != EINTR) {
      std::perror("loomrun: poll");
      exitCode_ = exitCode_.value_or(1);
      beginTermination();
      // Without poll there is nothing to wait on but the children themselves.
      for (auto& rank : ranks_) {
        if (!rank.running) continue;
        ::kill(-rank.pid, SIGKILL);
        int status = 0;
        ::waitpid(rank.pid, &status, 0);
        onExit(rank, status);
      }
      return;
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) pump(*streamOf[i]);
    }
    if (fds[0].revents != 0) handleSignals();
    checkDeadlines();
  }
}

void Supervisor::handleSignals() {
  for (const int sig : signals_.drain()) {
    if (sig == SIGCHLD) {
      reapExited();
    } else {
      // SIGINT, SIGTERM, SIGHUP: the ranks decide what they mean. If one dies
      // of it, the usual failure handling takes the rest down.
      signalRunning(sig);
    }
  }
  // SIGCHLDs coalesce and may race with the drain; checking is cheap.
  reapExited();
}

void Supervisor::reapExited() {
  // Ranks reaped together died at about the same time. A rank killed by a
  // signal is the likelier cause: its peers exit with an error only after
  // they noticed its death, so it is reported first.
  std::vector<std::pair<Rank*, int>> exited;
  for (auto& rank : ranks_) {
    if (!rank.running) continue;
    int status = 0;
    const pid_t pid = ::waitpid(rank.pid, &status, WNOHANG);
    if (pid == rank.pid) exited.emplace_back(&rank, status);
  }
  std::stable_partition(exited.begin(), exited.end(),
                        [](const auto& e) { return WIFSIGNALED(e.second); });
  for (const auto& [rank, status] : exited) onExit(*rank, status);
}

void Supervisor::onExit(Rank& rank, int status) {
  rank.running = false;
  // Whatever the rank left behind in its process group would be orphaned (and
  // could hold the output pipes open forever), so it goes with the rank.
  ::kill(-rank.pid, SIGKILL);
  const bool failed = WIFSIGNALED(status) || WEXITSTATUS(status) != 0;
  lastExitCode_ = statusCode(status);
  // Only the first failure is news: ranks that die after it are our doing,
  // or exit on the error its death gave them. Under --keep-going every
  // failure is news, and nobody is stopped.
  if (!failed || terminating_) return;
  reportFailure(rank, status);
  if (options_.keepGoing) {
    if (anyRunning()) std::fprintf(stderr, "loomrun: --keep-going: the other ranks run on\n");
    if (respawnsLeft_ > 0 && anyRunning()) respawn(rank);
    return;
  }
  exitCode_ = statusCode(status);
  beginTermination();
}

void Supervisor::reportFailure(const Rank& rank, int status) {
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "loomrun: rank %d killed by signal %d (%s)\n", rank.index,
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else {
    std::fprintf(stderr, "loomrun: rank %d exited with code %d\n", rank.index, WEXITSTATUS(status));
  }
}

void Supervisor::pump(Stream& stream) {
  char buffer[64 * 1024];
  const ssize_t n = ::read(stream.pipe.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    writeOut(stream.target, stream.tagger.flush());
    stream.pipe.reset();
    return;
  }
  writeOut(stream.target, stream.tagger.feed(std::string_view(buffer, static_cast<size_t>(n))));
}

void Supervisor::drainOutput() {
  // Every rank has been reaped and its group killed, so what remains in the
  // pipes is all there will be (barring a descendant that left the group with
  // setsid); read it without waiting.
  for (auto& rank : ranks_) {
    for (auto& stream : rank.streams) {
      while (stream.pipe.valid()) {
        pollfd fd{stream.pipe.get(), POLLIN, 0};
        if (::poll(&fd, 1, 0) <= 0) break;
        pump(stream);
      }
      if (stream.pipe.valid()) {
        writeOut(stream.target, stream.tagger.flush());
        stream.pipe.reset();
      }
    }
  }
}

void Supervisor::writeOut(int fd, const std::string& text) {
  if (brokenOut_[fd]) return;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n >= 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN) {
      pollfd wait{fd, POLLOUT, 0};
      ::poll(&wait, 1, -1);
    } else if (errno != EINTR) {
      // The reader is gone (`loomrun ... | head`). Closing the ranks' pipes
      // gives them the EPIPE/SIGPIPE they would get writing there directly.
      brokenOut_[fd] = true;
      for (auto& rank : ranks_) {
        for (auto& stream : rank.streams) {
          if (stream.target == fd) stream.pipe.reset();
        }
      }
      return;
    }
  }
}

void Supervisor::beginTermination() {
  if (terminating_) return;
  terminating_ = true;
  signalRunning(SIGTERM);
  killDeadline_ = Clock::now() + kTermGrace;
}

void Supervisor::signalRunning(int sig) {
  for (const auto& rank : ranks_) {
    if (rank.running) ::kill(-rank.pid, sig);
  }
}

void Supervisor::checkDeadlines() {
  const auto now = Clock::now();
  if (jobDeadline_ && now >= *jobDeadline_) {
    jobDeadline_.reset();
    // After a failure the ranks are already going down; its code stands.
    if (anyRunning() && !terminating_) {
      std::fprintf(stderr, "loomrun: timed out after %g s; killing all ranks\n",
                   *options_.timeoutSeconds);
      timedOut_ = true;
      beginTermination();
    }
  }
  if (killDeadline_ && now >= *killDeadline_) {
    killDeadline_.reset();
    signalRunning(SIGKILL);
  }
}

int Supervisor::pollTimeoutMs() const {
  std::optional<Clock::time_point> next;
  for (const auto& deadline : {jobDeadline_, killDeadline_}) {
    if (deadline && (!next || *deadline < *next)) next = deadline;
  }
  if (!next) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<decltype(left)>(left, 0, 60 * 60 * 1000));
}

bool Supervisor::anyRunning() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
}

}  // namespace loomrun
