// Splits one rank's output stream into lines and prefixes each with "[rank] ".
// Pure string work, so the tagging rules are independent of pipes and poll.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace loomrun {

class LineTagger {
 public:
  /// A line longer than this without a newline is emitted in tagged pieces, so
  /// a rank that never prints '\n' cannot make loomrun buffer without bound.
  static constexpr size_t kMaxLine = 64 * 1024;

  explicit LineTagger(int rank);

  /// Consumes `data` and returns every line it completed, each tagged and
  /// ending in '\n'. An unfinished line stays buffered for the next call.
  std::string feed(std::string_view data);

  /// At end of stream: the buffered partial line, tagged and given a '\n' so the
  /// next rank's tag starts a fresh line; empty when nothing is buffered.
  std::string flush();

 private:
  void appendLine(std::string& out, std::string_view line) const;

  std::string prefix_;
  std::string partial_;
};

}  // namespace loomrun
