// Reading LOOM_* environment variables with validation. Bad values are errors
// naming the variable, not silent defaults.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/names.h"

namespace loom {

std::optional<std::string> envString(const char* name);
/// Integer in [min, max]; throws InvalidArgument naming the variable otherwise.
long long envInt(const char* name, long long fallback, long long min, long long max);
/// Size with optional K/M/G suffix (powers of 1024).
size_t envBytes(const char* name, size_t fallback, size_t min, size_t max);
bool envFlag(const char* name, bool fallback);

/// The value whose word in `table` the variable holds; nullopt when it is
/// unset; throws InvalidArgument listing the table's words otherwise.
template <typename E, size_t N>
std::optional<E> envChoice(const char* name, const Named<E> (&table)[N]) {
  const std::optional<std::string> text = envString(name);
  if (!text) return std::nullopt;
  if (const std::optional<E> value = valueIn(table, *text)) return value;
  raise(ErrorCode::InvalidArgument, "{}='{}' is not one of {}", name, *text, namesIn(table));
}

}  // namespace loom
