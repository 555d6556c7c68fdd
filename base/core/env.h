// Reading LOOM_* environment variables with validation. Bad values are errors
// naming the variable, not silent defaults.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace loom {

std::optional<std::string> envString(const char* name);
/// Integer in [min, max]; throws InvalidArgument naming the variable otherwise.
long long envInt(const char* name, long long fallback, long long min, long long max);
/// Size with optional K/M/G suffix (powers of 1024).
size_t envBytes(const char* name, size_t fallback, size_t min, size_t max);
bool envFlag(const char* name, bool fallback);

}  // namespace loom
