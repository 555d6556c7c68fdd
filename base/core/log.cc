#include "core/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

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

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Warn:
      return "WARN";
    case LogLevel::Info:
      return "INFO";
    case LogLevel::Trace:
      return "TRACE";
    default:
      return "";
  }
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
  std::fprintf(stderr, "loom[%s:%d] %s %s\n", host, static_cast<int>(getpid()), levelName(level),
               message.c_str());
}

}  // namespace loom
