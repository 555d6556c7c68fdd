// Every thread's stack on SIGQUIT, for programs whose failure mode is a stall
// (the GPU tests, loom_perf): `kill -QUIT <pid>` prints each thread's frames to
// stderr and the program goes on. scripts/run-with-stacks.sh sends it when a
// run passes its deadline, before killing it; frames in shared objects print
// as object+offset, which `addr2line -f -e <object> <offset>` names on the
// machine that built them.
#pragma once

namespace loom::debug {

/// Installs the handlers (SIGQUIT for the process, SIGUSR2 for each thread it
/// asks). Call once, early in main.
void dumpStacksOnSigquit();

}  // namespace loom::debug
