// loomrun: starts N ranks of a Loom program on this machine.
//
// loomrun serves the job's rendezvous itself (a thread in this process) and
// hands every rank its address through LOOM_UNIQUE_ID, then supervises the
// ranks until all have exited. See docs/loomrun.md.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core_binding.h"
#include "options.h"
#include "rank_env.h"
#include "signal_watch.h"
#include "supervisor.h"

namespace {

// Every rank is on this machine, so the rendezvous listens on loopback: it is
// always up and never reachable from elsewhere. LOOM_BOOTSTRAP_HOST and
// LOOM_SOCKET_IFNAME still choose, for whoever set them on purpose.
loom::RendezvousOptions rendezvousOptions() {
  loom::RendezvousOptions options;
  if (!std::getenv("LOOM_BOOTSTRAP_HOST") && !std::getenv("LOOM_SOCKET_IFNAME")) {
    options.bindHost = "127.0.0.1";
  }
  return options;
}

int launch(const loomrun::Options& options) {
  std::vector<loomrun::CpuMask> cpus;
  try {
    cpus = loomrun::rankCpus(options.bindTo, options.nranks);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "loomrun: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    // Binding is how ranks run faster, never whether they run.
    if (options.bindTo == loomrun::Binding::Core) {
      std::fprintf(stderr, "loomrun: cannot bind ranks to cores: %s\n", e.what());
      return 1;
    }
    std::fprintf(stderr, "loomrun: warning: ranks not bound to cores: %s\n", e.what());
  }
  // Before any thread exists, so every thread has the signals blocked.
  loomrun::SignalWatch signals;

  loomrun::JobIdentity job;
  job.worldSize = options.nranks;
  job.jobId = "loomrun." + std::to_string(::getpid());
  try {
    job.uniqueIdHex = loom::startRendezvous(rendezvousOptions()).toHex();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loomrun: cannot start the rendezvous: %s\n", e.what());
    return 1;
  }

  // Replacements find the survivors through files in a private directory.
  std::string growDir;
  if (options.respawn > 0) {
    std::string pattern = "/tmp/loomrun-grow-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("loomrun: mkdtemp");
      return 1;
    }
    growDir = pattern;
  }
  std::vector<std::vector<std::string>> environments;
  environments.reserve(static_cast<size_t>(options.nranks));
  for (int rank = 0; rank < options.nranks; ++rank) {
    environments.push_back(loomrun::buildRankEnvironment(environ, rank, job));
    if (!growDir.empty()) environments.back().push_back("LOOM_GROW_DIR=" + growDir);
  }
  loomrun::Supervisor supervisor(options, signals, std::move(environments), std::move(cpus));
  const int status = supervisor.run();
  if (!growDir.empty()) std::filesystem::remove_all(growDir);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int exitCode = 0;
  const auto options = loomrun::parseOptions(argc, argv, exitCode);
  if (!options) return exitCode;
  try {
    exitCode = launch(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loomrun: %s\n", e.what());
    exitCode = 1;
  }
  // _exit, not return: the detached rendezvous thread may still be running,
  // and static destructors must not pull its state out from under it.
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(exitCode);
}
