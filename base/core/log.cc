#include "core/log.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/names.h"

namespace loom {
namespace {

/// The words a log line prints; LOOM_DEBUG takes them in any case, and
/// NONE or OFF for silence.
constexpr Named<LogLevel> kLevelNames[] = {
    {LogLevel::Warn, "WARN"}, {LogLevel::Info, "INFO"}, {LogLevel::Trace, "TRACE"}};

LogLevel parseLevel() {
  const char* value = std::getenv("LOOM_DEBUG");
  if (value == nullptr) return LogLevel::Warn;
  std::string word(value);
  for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (word == "NONE" || word == "OFF") return LogLevel::None;
  return valueIn(kLevelNames, word).value_or(LogLevel::Warn);
}

}  // namespace

LogLevel logLevel() {
  static const LogLevel level = parseLevel();
  return level;
}

void logLine(LogLevel level, const std::string& message) {
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  // One fprintf per line so lines from several ranks do not interleave.
  const std::string_view name = nameIn(kLevelNames, level, "");
  std::fprintf(stderr, "loom[%s:%d] %.*s %s\n", host, static_cast<int>(getpid()),
               static_cast<int>(name.size()), name.data(), message.c_str());
}

}  // namespace loom
