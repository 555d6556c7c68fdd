#include "stack_dump.h"

#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace loom::debug {
namespace {

constexpr int kMaxFrames = 64;

/// Writes `text` to stderr with write(2): stdio is not safe in a handler.
void say(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

/// This thread's frames, under a header naming the thread.
void dumpThisThread(int /*signal*/) {
  char header[96];
  std::snprintf(header, sizeof header, "---- thread %ld\n", static_cast<long>(syscall(SYS_gettid)));
  say(header);
  void* frames[kMaxFrames];
  const int depth = backtrace(frames, kMaxFrames);
  backtrace_symbols_fd(frames, depth, STDERR_FILENO);
}

/// Asks every other thread of the process for its frames, then gives its own.
/// opendir is not async-signal-safe: acceptable for a debugging aid used on a
/// program that is stuck anyway.
void dumpAllThreads(int signal) {
  say("==== stacks of every thread (SIGQUIT)\n");
  const long self = syscall(SYS_gettid);
  const pid_t pid = getpid();
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* entry = readdir(tasks)) {
      const long tid = std::strtol(entry->d_name, nullptr, 10);
      if (tid <= 0 || tid == self) continue;
      syscall(SYS_tgkill, pid, tid, SIGUSR2);
      usleep(20000);  // one thread's lines at a time
    }
    closedir(tasks);
  }
  dumpThisThread(signal);
  say("==== end of stacks\n");
}

}  // namespace

void dumpStacksOnSigquit() {
  // backtrace loads libgcc on first use, which must not happen in a handler.
  void* warm[1];
  backtrace(warm, 1);
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  action.sa_handler = dumpThisThread;
  sigaction(SIGUSR2, &action, nullptr);
  action.sa_handler = dumpAllThreads;
  sigaction(SIGQUIT, &action, nullptr);
}

}  // namespace loom::debug
