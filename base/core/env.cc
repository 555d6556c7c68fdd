#include "core/env.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace loom {

std::optional<std::string> envString(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

long long envInt(const char* name, long long fallback, long long min, long long max) {
  const auto text = envString(name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || end == text->c_str() || *end != '\0' || value < min || value > max) {
    raise(ErrorCode::InvalidArgument, "{}='{}' is not an integer in [{}, {}]", name, *text, min,
          max);
  }
  return value;
}

size_t envBytes(const char* name, size_t fallback, size_t min, size_t max) {
  const auto text = envString(name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long base = std::strtoull(text->c_str(), &end, 10);
  unsigned long long scale = 1;
  if (end != text->c_str() && *end != '\0' && end[1] == '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        scale = 1ULL << 10;
        ++end;
        break;
      case 'm':
      case 'M':
        scale = 1ULL << 20;
        ++end;
        break;
      case 'g':
      case 'G':
        scale = 1ULL << 30;
        ++end;
        break;
      default:
        break;
    }
  }
  const unsigned long long value = base * scale;
  if (errno != 0 || end == text->c_str() || *end != '\0' || text->front() == '-' ||
      (scale != 0 && value / scale != base) || value < min || value > max) {
    raise(ErrorCode::InvalidArgument,
          "{}='{}' is not a size in [{}, {}] bytes (K/M/G suffixes allowed)", name, *text, min,
          max);
  }
  return static_cast<size_t>(value);
}

bool envFlag(const char* name, bool fallback) {
  const auto text = envString(name);
  if (!text) return fallback;
  if (*text == "1" || *text == "true" || *text == "yes" || *text == "on") return true;
  if (*text == "0" || *text == "false" || *text == "no" || *text == "off") return false;
  raise(ErrorCode::InvalidArgument, "{}='{}' is not a boolean (use 0/1)", name, *text);
}

}  // namespace loom
