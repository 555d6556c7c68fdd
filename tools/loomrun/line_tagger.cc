#include "line_tagger.h"

#include <fmt/format.h>

namespace loomrun {

// fmt, not "[" + std::to_string(): g++ 12 -O3 warns falsely (-Wrestrict) on that.
LineTagger::LineTagger(int rank) : prefix_(fmt::format("[{}] ", rank)) {}

void LineTagger::appendLine(std::string& out, std::string_view line) const {
  out += prefix_;
  out += line;
  out += '\n';
}

std::string LineTagger::feed(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      partial_ += data;
      break;
    }
    partial_ += data.substr(0, newline);
    appendLine(out, partial_);
    partial_.clear();
    data.remove_prefix(newline + 1);
  }
  while (partial_.size() >= kMaxLine) {
    appendLine(out, std::string_view(partial_).substr(0, kMaxLine));
    partial_.erase(0, kMaxLine);
  }
  return out;
}

std::string LineTagger::flush() {
  std::string out;
  if (!partial_.empty()) appendLine(out, partial_);
  partial_.clear();
  return out;
}

}  // namespace loomrun
