#include "fault_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <thread>
#include <vector>

#include "pipe_io.h"

namespace loomtest {
namespace {

using Clock = std::chrono::steady_clock;

std::string callError(const char* what, loomResult_t rc) {
  std::ostringstream out;
  out << what << " returned " << static_cast<int>(rc) << " (" << loomGetErrorString(rc)
      << "): " << loomGetLastError(nullptr);
  return out.str();
}

double secondsSince(int64_t startNs) { return (monotonicNs() - startNs) / 1e9; }

[[noreturn]] void childMain(const WorldSpec& spec, const FaultBody& body, const loomUniqueId& id,
                            FaultShared* shared, int rank, int fd) {
  ::signal(SIGPIPE, SIG_IGN);
  ::setenv("LOOM_TRANSPORT", transportName(spec.transport), 1);
  ::setenv("LOOM_TIMEOUT", std::to_string(spec.timeoutSeconds).c_str(), 1);
  for (const auto& [name, value] : spec.env) ::setenv(name.c_str(), value.c_str(), 1);
  if (!spec.commId.empty()) {
    ::setenv("LOOM_COMM_ID", spec.commId.c_str(), 1);
    ::setenv("LOOM_SECRET", spec.secret.c_str(), 1);
    ::setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("LOOM_WORLD_SIZE", std::to_string(spec.nranks).c_str(), 1);
  }
  if (spec.beforeInit) spec.beforeInit(rank);

  RankOutcome out;
  FaultContext ctx;
  ctx.rank = rank;
  ctx.nranks = spec.nranks;
  ctx.shared = shared;
  ctx.timeoutSeconds = spec.timeoutSeconds;
  double initSeconds = -1;
  double destroySeconds = -1;
  const int64_t initStart = monotonicNs();
  const loomResult_t rc = spec.commId.empty() ? loomCommInitRank(&ctx.comm, spec.nranks, id, rank)
                                              : loomCommInitFromEnv(&ctx.comm);
  initSeconds = secondsSince(initStart);
  if (rc != loomSuccess) {
    out.error = callError(spec.commId.empty() ? "loomCommInitRank" : "loomCommInitFromEnv", rc);
  } else {
    try {
      out = body(ctx);
    } catch (const std::exception& e) {
      out.error = std::string("exception: ") + e.what();
    } catch (...) {
      out.error = "unknown exception";
    }
    if (ctx.comm != nullptr) {
      const int64_t destroyStart = monotonicNs();
      const loomResult_t drc = loomCommDestroy(ctx.comm);
      destroySeconds = secondsSince(destroyStart);
      if (drc != loomSuccess) {
        if (!out.error.empty()) out.error += "; ";
        out.error += callError("loomCommDestroy", drc);
      }
      if (destroySeconds > spec.timeoutSeconds + 1) {
        if (!out.error.empty()) out.error += "; ";
        out.error += "loomCommDestroy took " + std::to_string(destroySeconds) + " s";
      }
    }
  }
  char timing[64];
  std::snprintf(timing, sizeof timing, "%.6f %.6f", initSeconds, destroySeconds);
  writeString(fd, out.error);
  writeString(fd, out.report);
  writeString(fd, timing);
  ::close(fd);
  ::_exit(out.error.empty() ? 0 : 1);
}

/// A child keeps only stdio and its pipe: the parent's rendezvous sockets and
/// the other children's pipes must not be held open by unrelated processes
/// (a held duplicate would hide a close from the peer).
void closeInheritedFds(int keep) {
  std::vector<int> fds;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != keep && fd != ::dirfd(dir)) fds.push_back(fd);
    }
    ::closedir(dir);
  }
  for (int fd : fds) ::close(fd);
}

struct Child {
  size_t world = 0;
  int rank = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string buf;
  bool reaped = false;
  int status = 0;
  bool expendable = false;
  bool expended = false;
  bool deadlineKilled = false;
};

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

void drain(Child& c) {
  char chunk[4096];
  for (;;) {
    const ssize_t got = ::read(c.fd, chunk, sizeof chunk);
    if (got > 0) {
      c.buf.append(chunk, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) {
      ::close(c.fd);
      c.fd = -1;
    }
    return;
  }
}

}  // namespace

int64_t monotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string FaultRankResult::describe(int rank) const {
  std::ostringstream out;
  out << "rank " << rank << ": ";
  if (!death.empty()) out << death << (outcome.error.empty() ? "" : "; ");
  out << outcome.error;
  return out.str();
}

std::vector<WorldResult> runWorlds(
    const std::vector<WorldSpec>& specs, const std::vector<FaultBody>& bodies, int deadlineSeconds,
    const std::function<void(const std::atomic<bool>& childrenDone)>& duringRun) {
  const size_t nworlds = specs.size();
  std::vector<WorldResult> results(nworlds);
  std::vector<FaultShared*> shared(nworlds, nullptr);
  std::vector<loomUniqueId> ids(nworlds);
  for (size_t w = 0; w < nworlds; ++w) {
    results[w].ranks.resize(specs[w].nranks);
    void* page = ::mmap(nullptr, sizeof(FaultShared), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
      for (auto& r : results[w].ranks) r.death = "mmap of the shared page failed";
      continue;
    }
    shared[w] = new (page) FaultShared();
    if (specs[w].commId.empty()) {
      // The rendezvous thread lives in this process; its join timeout is LOOM_TIMEOUT.
      ScopedEnv env({{"LOOM_TIMEOUT", std::to_string(specs[w].timeoutSeconds)}});
      const loomResult_t rc = loomGetUniqueId(&ids[w]);
      if (rc != loomSuccess) {
        for (auto& r : results[w].ranks) r.death = callError("loomGetUniqueId", rc);
        ::munmap(page, sizeof(FaultShared));
        shared[w] = nullptr;
      }
    }
  }

  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<Child> children;
  const int64_t startNs = monotonicNs();
  for (size_t w = 0; w < nworlds; ++w) {
    if (shared[w] == nullptr) continue;
    for (int r = 0; r < specs[w].nranks; ++r) {
      Child c;
      c.world = w;
      c.rank = r;
      for (int e : specs[w].expendable) c.expendable |= e == r;
      int p[2];
      if (::pipe(p) != 0) {
        results[w].ranks[r].death = std::string("pipe failed: ") + std::strerror(errno);
        continue;
      }
      const pid_t pid = ::fork();
      if (pid == 0) {
        closeInheritedFds(p[1]);
        childMain(specs[w], bodies[w], ids[w], shared[w], r, p[1]);
      }
      ::close(p[1]);
      if (pid < 0) {
        results[w].ranks[r].death = std::string("fork failed: ") + std::strerror(errno);
        ::close(p[0]);
        continue;
      }
      c.pid = pid;
      c.fd = p[0];
      ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
      children.push_back(std::move(c));
    }
  }

  std::atomic<bool> childrenDone{false};
  std::thread side;
  if (duringRun) side = std::thread([&] { duringRun(childrenDone); });

  const auto deadline = Clock::now() + std::chrono::seconds(deadlineSeconds);
  for (;;) {
    bool anyLeft = false;
    for (Child& c : children) {
      if (c.reaped) continue;
      if (::waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.reaped = true;
        if (!c.expendable) results[c.world].wallSeconds = secondsSince(startNs);
      } else {
        anyLeft = true;
      }
    }
    // Expendable ranks go once every other rank of their world is gone.
    for (Child& c : children) {
      if (c.reaped || !c.expendable || c.expended) continue;
      bool othersGone = true;
      for (const Child& o : children) {
        if (o.world == c.world && !o.expendable && !o.reaped) othersGone = false;
      }
      if (othersGone) {
        ::kill(c.pid, SIGKILL);
        c.expended = true;
      }
    }
    std::vector<pollfd> pfds;
    std::vector<Child*> owners;
    for (Child& c : children) {
      if (c.fd >= 0) {
        pfds.push_back({c.fd, POLLIN, 0});
        owners.push_back(&c);
      }
    }
    if (!anyLeft && pfds.empty()) break;
    if (Clock::now() > deadline) break;
    if (!pfds.empty()) {
      ::poll(pfds.data(), pfds.size(), 10);
      for (size_t i = 0; i < pfds.size(); ++i) {
        if (pfds[i].revents != 0) drain(*owners[i]);
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!anyLeft) {
      for (Child& c : children) {
        if (c.fd >= 0) {
          drain(c);
          if (c.fd >= 0) {
            ::close(c.fd);
            c.fd = -1;
          }
        }
      }
    }
  }
  for (Child& c : children) {
    if (!c.reaped) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.status, 0);
      c.reaped = true;
      c.deadlineKilled = !c.expended;
    }
    if (c.fd >= 0) {
      drain(c);
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
    }
  }
  childrenDone.store(true);
  if (side.joinable()) side.join();

  for (Child& c : children) {
    FaultRankResult& r = results[c.world].ranks[c.rank];
    size_t pos = 0;
    RankOutcome out;
    std::string timing;
    if (readString(c.buf, &pos, &out.error) && readString(c.buf, &pos, &out.report) &&
        readString(c.buf, &pos, &timing)) {
      r.reported = true;
      r.outcome = std::move(out);
      std::sscanf(timing.c_str(), "%lf %lf", &r.initSeconds, &r.destroySeconds);
    }
    r.expended = c.expended;
    if (WIFSIGNALED(c.status)) r.signal = WTERMSIG(c.status);
    if (c.deadlineKilled) {
      r.death =
          "still running after the " + std::to_string(deadlineSeconds) + " s deadline; killed";
    } else if (!c.expended) {
      const bool cleanExit =
          WIFEXITED(c.status) && (WEXITSTATUS(c.status) == 0 || WEXITSTATUS(c.status) == 1);
      if (!r.reported || !cleanExit) {
        r.death = describeStatus(c.status) + (r.reported ? "" : " without reporting");
      }
    }
  }
  for (size_t w = 0; w < nworlds; ++w) {
    if (shared[w] == nullptr) continue;
    results[w].killNs = shared[w]->killNs.load();
    results[w].victimCompleted = shared[w]->victimCompleted.load();
    results[w].victimFaultNs = shared[w]->victimFaultNs.load();
    shared[w]->~FaultShared();
    ::munmap(shared[w], sizeof(FaultShared));
  }
  return results;
}

}  // namespace loomtest
