// loomrun's command line: what to launch and how to supervise it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core_binding.h"

namespace loomrun {

struct Options {
  int nranks = 0;
  bool tagOutput = false;
  /// A rank's failure does not stop the others (jobs that shrink and go on);
  /// loomrun then exits as the last rank to finish did.
  bool keepGoing = false;
  /// Replacements to start, in all, for ranks that fail (implies keepGoing).
  /// Each gets its rank's environment plus LOOM_REPLACEMENT=1; every rank gets
  /// LOOM_GROW_DIR, where replacements and survivors meet (docs/loomrun.md).
  int respawn = 0;
  /// --bind-to (core_binding.h).
  Binding bindTo = Binding::Auto;
  /// Seconds before every rank is killed and loomrun exits 124; none: no limit.
  std::optional<double> timeoutSeconds;
  /// The program and its arguments, exactly as given after loomrun's options.
  std::vector<std::string> command;
};

/// Parses argv. On --help or a usage error it prints the message itself and
/// returns nullopt with `exitCode` set (0 for --help, 2 for bad usage).
std::optional<Options> parseOptions(int argc, char** argv, int& exitCode);

}  // namespace loomrun
