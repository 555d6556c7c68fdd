// Command-line parsing with CLI11. Everything from the first positional
// argument on belongs to the launched program, so `loomrun -n 2 sh -c 'x'`
// never mistakes the program's own flags for loomrun's.
#include "options.h"

#include <CLI/CLI.hpp>

namespace loomrun {

namespace {

constexpr const char* kUsage =
    "usage: loomrun -n N [--tag-output] [--keep-going] [--respawn K] [--timeout SECONDS] "
    "[--bind-to auto|core|none] [--] "
    "prog [args...]";

/// --help's first line says what loomrun takes, the program included (CLI11's
/// own would read "loomrun [OPTIONS]").
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
    return std::string(kUsage) + "\n";
  }
};

}  // namespace

std::optional<Options> parseOptions(int argc, char** argv, int& exitCode) {
  Options options;
  CLI::App app{"Launch N ranks of a Loom program on this machine.", "loomrun"};
  // Stop at the first positional: the rest is the program's command line.
  app.prefix_command();
  app.formatter(std::make_shared<UsageFormatter>());
  app.set_version_flag("--version", std::string("loomrun (Loom ") + LOOM_VERSION_STRING + ")");
  app.add_option("-n,--np", options.nranks, "number of ranks to start")
      ->required()
      ->check(CLI::Range(1, 4096));
  app.add_flag("--tag-output", options.tagOutput,
               "prefix every line of each rank's stdout and stderr with [rank]");
  app.add_flag("--keep-going", options.keepGoing,
               "when a rank fails, report it and let the others run on (they may shrink their "
               "communicator); exit as the last rank to finish did");
  app.add_option("--respawn", options.respawn,
                 "start a replacement for a rank that fails, at most this many in all (implies "
                 "--keep-going); replacements get LOOM_REPLACEMENT=1, every rank LOOM_GROW_DIR")
      ->check(CLI::Range(0, 4096));
  std::string bindTo = "auto";
  app.add_option("--bind-to", bindTo,
                 "core: each rank on cores of its own (an equal share, in order); none: wherever "
                 "the scheduler puts it; auto (default): core where every rank gets one, else "
                 "none")
      ->check(CLI::IsMember({"auto", "core", "none"}));
  app.add_option("--timeout", options.timeoutSeconds,
                 "kill every rank and exit 124 after this many seconds");
  app.footer(
      "Each rank gets LOOM_RANK, LOOM_WORLD_SIZE, LOOM_LOCAL_RANK, LOOM_LOCAL_SIZE and "
      "LOOM_UNIQUE_ID. See docs/loomrun.md.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code != 0) std::fprintf(stderr, "%s\n", kUsage);
    exitCode = code == 0 ? 0 : 2;
    return std::nullopt;
  }
  auto usageError = [&](const std::string& message) {
    std::fprintf(stderr, "loomrun: %s\n%s\n", message.c_str(), kUsage);
    exitCode = 2;
    return std::nullopt;
  };
  // The upper bound keeps the deadline arithmetic far from overflow.
  if (options.timeoutSeconds && !(*options.timeoutSeconds > 0 && *options.timeoutSeconds < 1e9)) {
    return usageError("--timeout must be a positive number of seconds (below 1e9)");
  }
  options.bindTo = *bindingNamed(bindTo);
  if (options.respawn > 0) options.keepGoing = true;
  options.command = app.remaining();
  if (!options.command.empty() && options.command.front() == "--") {
    // An explicit separator: whatever follows is the program, dashes and all.
    options.command.erase(options.command.begin());
  } else if (!options.command.empty() && options.command.front().starts_with("-")) {
    // prefix_command hands unknown options over as the program; a typo such as
    // --tag-ouput should be a usage error, not "cannot run '--tag-ouput'".
    return usageError("unknown option '" + options.command.front() + "'");
  }
  if (options.command.empty()) return usageError("no program to run");
  return options;
}

}  // namespace loomrun
