// Logging to stderr, filtered by LOOM_DEBUG=WARN|INFO|TRACE (default WARN).
// Lines look like "loom[host:pid] INFO message".
#pragma once

#include <fmt/format.h>

#include <string>

namespace loom {

enum class LogLevel { None = 0, Warn = 1, Info = 2, Trace = 3 };

/// The level parsed once from LOOM_DEBUG (immutable afterwards).
LogLevel logLevel();
void logLine(LogLevel level, const std::string& message);

template <typename... Args>
void logAt(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (logLevel() >= level) logLine(level, fmt::format(format, std::forward<Args>(args)...));
}

#define LOOM_WARN(...) ::loom::logAt(::loom::LogLevel::Warn, __VA_ARGS__)
#define LOOM_INFO(...) ::loom::logAt(::loom::LogLevel::Info, __VA_ARGS__)
#define LOOM_TRACE(...) ::loom::logAt(::loom::LogLevel::Trace, __VA_ARGS__)

}  // namespace loom
