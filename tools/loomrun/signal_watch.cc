#include "signal_watch.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace loomrun {

SignalWatch::SignalWatch() {
  // An inherited SIGCHLD=SIG_IGN would make the kernel reap children for us and
  // hide their exit status, so it is reset. The others keep their disposition:
  // a SIGHUP ignored by nohup stays ignored, for loomrun and its ranks alike.
  ::signal(SIGCHLD, SIG_DFL);

  sigset_t watched;
  sigemptyset(&watched);
  for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&watched, sig);
  // SIGPIPE is only blocked, never read: writing tagged output to a closed
  // stdout then fails with EPIPE, which loomrun handles, instead of killing it.
  if (::sigprocmask(SIG_BLOCK, &watched, &originalMask_) != 0) {
    throw std::system_error(errno, std::generic_category(), "sigprocmask");
  }
  sigdelset(&watched, SIGPIPE);
  fd_.reset(::signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_.valid()) throw std::system_error(errno, std::generic_category(), "signalfd");
}

std::vector<int> SignalWatch::drain() {
  std::vector<int> signals;
  signalfd_siginfo info;
  while (::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    signals.push_back(static_cast<int>(info.ssi_signo));
  }
  return signals;
}

}  // namespace loomrun
