#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "pipe_io.h"

namespace loomtest {
namespace {

using Clock = std::chrono::steady_clock;

std::string callError(const char* what, loomResult_t rc, loomComm_t comm) {
  std::ostringstream out;
  out << what << " returned " << static_cast<int>(rc) << " (" << loomGetErrorString(rc)
      << "): " << loomGetLastError(comm);
  return out.str();
}

/// Runs the body, turning escaped exceptions into an error text, then frees
/// the communicator (from the rank's own thread: a destroy that synchronises
/// with peers must not run one rank after another).
RankOutcome runBody(const RankBody& body, int rank, int nranks, loomComm_t comm) {
  RankOutcome out;
  try {
    out = body(rank, nranks, comm);
  } catch (const std::exception& e) {
    out.error = std::string("exception: ") + e.what();
  } catch (...) {
    out.error = "unknown exception";
  }
  const loomResult_t rc = loomCommDestroy(comm);
  if (rc != loomSuccess) {
    if (!out.error.empty()) out.error += "; ";
    out.error += callError("loomCommDestroy", rc, nullptr);
  }
  return out;
}

// --- threads --------------------------------------------------------------------

/// A stuck thread cannot be killed, so past the deadline the whole binary
/// stops, naming the ranks that never finished; ctest records the failure.
class Watchdog {
 public:
  Watchdog(int seconds, const std::vector<std::atomic<bool>>& done)
      : done_(done), thread_([this, seconds] { watch(seconds); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      disarmed_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void watch(int seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return disarmed_; })) return;
    std::fprintf(stderr, "loom multiproc harness: thread ranks still running after %d s:", seconds);
    for (size_t r = 0; r < done_.size(); ++r) {
      if (!done_[r].load()) std::fprintf(stderr, " %zu", r);
    }
    std::fprintf(stderr, "; aborting the test binary\n");
    std::fflush(stderr);
    std::_Exit(3);
  }

  const std::vector<std::atomic<bool>>& done_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

std::vector<RankResult> runThreads(const RunOptions& options, const RankBody& body) {
  const int n = options.nranks;
  std::vector<RankResult> results(n);
  ScopedEnv env(rankEnvironment(options));
  std::vector<loomComm_t> comms(n, nullptr);
  const loomResult_t rc = loomCommInitAll(comms.data(), n, nullptr);
  if (rc != loomSuccess) {
    const std::string why = callError("loomCommInitAll", rc, nullptr);
    for (auto& r : results) r.death = why;
    return results;
  }
  std::vector<std::atomic<bool>> done(n);
  Watchdog watchdog(options.deadlineSeconds, done);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      results[r].outcome = runBody(body, r, n, comms[r]);
      results[r].reported = true;
      done[r].store(true);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// --- processes -------------------------------------------------------------------

[[noreturn]] void childMain(const RunOptions& options, const RankBody& body, const loomUniqueId& id,
                            int rank, int fd) {
  ::signal(SIGPIPE, SIG_IGN);
  for (const auto& [name, value] : rankEnvironment(options)) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  RankOutcome out;
  loomComm_t comm = nullptr;
  const loomResult_t rc = loomCommInitRank(&comm, options.nranks, id, rank);
  if (rc != loomSuccess) {
    out.error = callError("loomCommInitRank", rc, nullptr);
  } else {
    out = runBody(body, rank, options.nranks, comm);
  }
  writeString(fd, out.error);
  writeString(fd, out.report);
  ::close(fd);
  // _exit: the child must not run the parent's atexit handlers or gtest's.
  ::_exit(out.error.empty() ? 0 : 1);
}

std::string describeStatus(int status) {
  std::ostringstream out;
  if (WIFSIGNALED(status)) {
    out << "killed by signal " << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")";
  } else if (WIFEXITED(status)) {
    out << "exited with code " << WEXITSTATUS(status);
  } else {
    out << "wait status " << status;
  }
  return out.str();
}

/// Forks the process that creates the unique id and hosts its rendezvous
/// thread; returns an error text, empty on success.
std::string startIdHost(loomUniqueId* id, pid_t* host) {
  int p[2];
  if (::pipe(p) != 0) return std::string("pipe failed: ") + std::strerror(errno);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("fork failed: ") + std::strerror(errno);
  if (pid == 0) {
    ::close(p[0]);
    loomUniqueId made;
    const loomResult_t rc = loomGetUniqueId(&made);
    writeAll(p[1], &rc, sizeof rc);
    writeAll(p[1], &made, sizeof made);
    ::close(p[1]);
    // Host the rendezvous until the parent kills us after the run.
    for (;;) ::pause();
  }
  ::close(p[1]);
  *host = pid;
  loomResult_t rc = loomInternalError;
  size_t got = 0;
  char buf[sizeof rc + sizeof *id];
  while (got < sizeof buf) {
    const ssize_t n = ::read(p[0], buf + got, sizeof buf - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(p[0]);
  if (got != sizeof buf) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return "the id host exited before handing over the unique id";
  }
  std::memcpy(&rc, buf, sizeof rc);
  std::memcpy(id, buf + sizeof rc, sizeof *id);
  if (rc != loomSuccess) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return callError("loomGetUniqueId", rc, nullptr);
  }
  return "";
}

std::vector<RankResult> runProcesses(const RunOptions& options, const RankBody& body) {
  const int n = options.nranks;
  std::vector<RankResult> results(n);
  // The id's rendezvous thread must not live in this process: forking a
  // process that has threads can leave a child deadlocked on a lock one of them
  // held (malloc's, or a sanitizer's). A first child creates the id, hands it
  // over through a pipe and hosts the rendezvous until the run is over.
  loomUniqueId id;
  pid_t idHost = -1;
  if (const std::string why = startIdHost(&id, &idHost); !why.empty()) {
    for (auto& r : results) r.death = why;
    return results;
  }
  struct IdHostReaper {
    pid_t pid;
    ~IdHostReaper() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{idHost};
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(n, -1);
  std::vector<int> fds(n, -1);
  std::vector<std::string> bufs(n);
  std::vector<bool> reaped(n, false);
  std::vector<int> statuses(n, 0);
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (::pipe(p) != 0) {
      results[r].death = std::string("pipe failed: ") + std::strerror(errno);
      reaped[r] = true;
      continue;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      for (int q = 0; q < r; ++q) {
        if (fds[q] >= 0) ::close(fds[q]);
      }
      childMain(options, body, id, r, p[1]);
    }
    ::close(p[1]);
    if (pid < 0) {
      results[r].death = std::string("fork failed: ") + std::strerror(errno);
      ::close(p[0]);
      reaped[r] = true;
      continue;
    }
    pids[r] = pid;
    fds[r] = p[0];
    ::fcntl(fds[r], F_SETFL, ::fcntl(fds[r], F_GETFL) | O_NONBLOCK);
  }

  const auto deadline = Clock::now() + std::chrono::seconds(options.deadlineSeconds);
  auto drain = [&](int r) {
    char chunk[4096];
    for (;;) {
      const ssize_t got = ::read(fds[r], chunk, sizeof chunk);
      if (got > 0) {
        bufs[r].append(chunk, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) {  // EOF: the child closed its end
        ::close(fds[r]);
        fds[r] = -1;
      }
      return;
    }
  };
  for (;;) {
    bool anyLeft = false;
    for (int r = 0; r < n; ++r) {
      if (reaped[r]) continue;
      if (::waitpid(pids[r], &statuses[r], WNOHANG) == pids[r]) {
        reaped[r] = true;
      } else {
        anyLeft = true;
      }
    }
    // Pipes are read while children run so a long message cannot block one.
    std::vector<pollfd> pfds;
    std::vector<int> owners;
    for (int r = 0; r < n; ++r) {
      if (fds[r] >= 0) {
        pfds.push_back({fds[r], POLLIN, 0});
        owners.push_back(r);
      }
    }
    if (!anyLeft && pfds.empty()) break;
    if (Clock::now() > deadline) {
      break;
    }
    if (!pfds.empty()) {
      ::poll(pfds.data(), pfds.size(), 20);
      for (size_t i = 0; i < pfds.size(); ++i) {
        if (pfds[i].revents != 0) drain(owners[i]);
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A reaped child with a pipe still open (inherited by something it
    // started) must not keep us here: its outcome is already in the buffer.
    if (!anyLeft) {
      for (int r = 0; r < n; ++r) {
        if (fds[r] >= 0) {
          drain(r);
          if (fds[r] >= 0) {
            ::close(fds[r]);
            fds[r] = -1;
          }
        }
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    if (!reaped[r] && pids[r] > 0) {
      ::kill(pids[r], SIGKILL);
      ::waitpid(pids[r], &statuses[r], 0);
      reaped[r] = true;
      results[r].death = "still running after the " + std::to_string(options.deadlineSeconds) +
                         " s deadline; killed";
    }
    if (fds[r] >= 0) {
      drain(r);
      if (fds[r] >= 0) ::close(fds[r]);
      fds[r] = -1;
    }
  }
  for (int r = 0; r < n; ++r) {
    if (pids[r] <= 0) continue;
    size_t pos = 0;
    RankOutcome out;
    if (readString(bufs[r], &pos, &out.error) && readString(bufs[r], &pos, &out.report)) {
      results[r].reported = true;
      results[r].outcome = std::move(out);
    }
    const int st = statuses[r];
    const bool cleanExit = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1);
    if (results[r].death.empty() && (!results[r].reported || !cleanExit)) {
      results[r].death = describeStatus(st) + (results[r].reported ? "" : " without reporting");
    }
  }
  return results;
}

}  // namespace

const char* launchName(Launch launch) {
  return launch == Launch::Threads ? "threads" : "processes";
}

const char* transportName(Transport transport) {
  return transport == Transport::Shm ? "shm" : "tcp";
}

std::string RankResult::describe(int rank) const {
  std::ostringstream out;
  out << "rank " << rank << ": ";
  if (!death.empty()) out << death << (outcome.error.empty() ? "" : "; ");
  out << outcome.error;
  return out.str();
}

std::vector<std::pair<std::string, std::string>> rankEnvironment(const RunOptions& options) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"LOOM_TRANSPORT", transportName(options.transport)}, {"LOOM_TIMEOUT", "30"}};
  env.insert(env.end(), options.env.begin(), options.env.end());
  return env;
}

std::vector<RankResult> runRanks(const RunOptions& options, const RankBody& body) {
  return options.launch == Launch::Threads ? runThreads(options, body)
                                           : runProcesses(options, body);
}

std::string failures(const std::vector<RankResult>& results) {
  std::string out;
  for (size_t r = 0; r < results.size(); ++r) {
    if (!results[r].ok()) out += results[r].describe(static_cast<int>(r)) + "\n";
  }
  return out;
}

std::string reportMismatch(const std::vector<RankResult>& results) {
  for (size_t r = 1; r < results.size(); ++r) {
    const std::string& a = results[0].outcome.report;
    const std::string& b = results[r].outcome.report;
    if (a == b) continue;
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    const size_t from = i > 40 ? i - 40 : 0;
    return "rank " + std::to_string(r) + "'s report differs from rank 0's at byte " +
           std::to_string(i) + ": rank 0 '..." + a.substr(from, 100) + "' vs rank " +
           std::to_string(r) + " '..." + b.substr(from, 100) + "'";
  }
  return "";
}

ScopedEnv::ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
  for (const auto& [name, value] : vars) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
}

ScopedEnv::~ScopedEnv() {
  // Restore in reverse so a name set twice ends at its original value.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

TimedCall timedAllReduce(loomComm_t comm, std::vector<float>& values) {
  TimedCall call;
  const auto start = std::chrono::steady_clock::now();
  call.rc = loomAllReduce(values.data(), values.data(), values.size(), loomFloat32, loomSum, comm,
                          nullptr);
  call.took = std::chrono::steady_clock::now() - start;
  if (call.rc != loomSuccess) call.message = loomGetLastError(comm);
  return call;
}

}  // namespace loomtest
