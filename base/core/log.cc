#include "core/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/names.h"

namespace loom {
namespace {

LogLevel parseLevel() {
  const char* value = std::getenv("LOOM_DEBUG");
  if (value == nullptr) return LogLevel::Warn;
  if (strcasecmp(value, "NONE") == 0 || strcasecmp(value, "OFF") == 0) return LogLevel::None;
  if (strcasecmp(value, "INFO") == 0) return LogLevel::Info;
  if (strcasecmp(value, "TRACE") == 0) return LogLevel::Trace;
  return LogLevel::Warn;
}

constexpr Named<LogLevel> kLevelNames[] = {
    {LogLevel::Warn, "WARN"}, {LogLevel::Info, "INFO"}, {LogLevel::Trace, "TRACE"}};

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
