#include "env_mapping.h"

#include <fmt/ranges.h>
#include <loom/loom.h>
#include <nccl.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log.h"
#include "socket_ifname.h"

namespace loom_nccl {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// NCCL's levels are VERSION, WARN, INFO, TRACE (and ABORT); Loom has no
/// version-only level, so VERSION keeps warnings and gets the banner below.
std::optional<std::string> debugLevel(const std::string& value) {
  const std::string level = lower(value);
  if (level == "version" || level == "warn" || level == "abort") return "WARN";
  if (level == "info") return "INFO";
  if (level == "trace") return "TRACE";
  return std::nullopt;
}

/// One algorithm that Loom also has. Lists, per-collective forms and NCCL-only
/// algorithms (CollNet, NVLS, PAT) have no Loom equivalent.
std::optional<std::string> algorithm(const std::string& value) {
  const std::string name = lower(value);
  if (name == "ring" || name == "tree") return name;
  return std::nullopt;
}

/// Without shared memory, ranks of one host talk over tcp in Loom too.
std::optional<std::string> shmDisable(const std::string& value) {
  if (value == "1") return "tcp";
  return std::nullopt;
}

struct Mapping {
  std::string_view nccl;
  const char* loom;
  std::optional<std::string> (*translate)(const std::string&);
};

constexpr Mapping kMappings[] = {
    {"NCCL_DEBUG", "LOOM_DEBUG", debugLevel},
    {"NCCL_ALGO", "LOOM_ALGO", algorithm},
    {"NCCL_SOCKET_IFNAME", "LOOM_SOCKET_IFNAME", interfaceFor},
    {"NCCL_SHM_DISABLE", "LOOM_TRANSPORT", shmDisable},
};

const Mapping* mappingFor(std::string_view name) {
  for (const Mapping& m : kMappings) {
    if (m.nccl == name) return &m;
  }
  return nullptr;
}

void apply(const Mapping& m, const std::string& value) {
  if (const char* mine = std::getenv(m.loom)) {
    logInfo("{}={} ignored: {}={} is set explicitly", m.nccl, value, m.loom, mine);
    return;
  }
  const std::optional<std::string> translated = m.translate(value);
  if (!translated) {
    logInfo("{}={} has no {} equivalent; ignored", m.nccl, value, m.loom);
    return;
  }
  setenv(m.loom, translated->c_str(), 0);
  logInfo("{}={} -> {}={}", m.nccl, value, m.loom, *translated);
}

void printBanner() {
  const char* level = std::getenv("NCCL_DEBUG");
  if (level == nullptr || strcasecmp(level, "WARN") == 0 || strcasecmp(level, "ABORT") == 0) {
    return;
  }
  int loomVersion = 0;
  loomGetVersion(&loomVersion);
  writeInfo(fmt::format("NCCL {}.{}.{} ABI on Loom {}.{}.{} (libnccl.so.2 shim)", NCCL_MAJOR,
                        NCCL_MINOR, NCCL_PATCH, loomVersion / 10000, loomVersion / 100 % 100,
                        loomVersion % 100));
}

void mapEnvironment() {
  // Collect first: setenv may reallocate environ while we walk it.
  std::vector<std::pair<const Mapping*, std::string>> mapped;
  std::vector<std::string> ignored;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    if (!text.starts_with("NCCL_")) continue;
    const size_t eq = text.find('=');
    const std::string_view name = text.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? "" : text.substr(eq + 1));
    if (const Mapping* m = mappingFor(name)) {
      mapped.emplace_back(m, value);
    } else {
      ignored.emplace_back(name);
    }
  }
  for (const auto& [m, value] : mapped) apply(*m, value);
  if (!ignored.empty()) {
    std::sort(ignored.begin(), ignored.end());
    logInfo("ignoring {} (no Loom meaning)", fmt::join(ignored, ", "));
  }
  printBanner();
}

}  // namespace

void mapEnvironmentOnce() {
  // Once per process: the mapping is the process's environment, and setenv is
  // safe only while no other thread reads it (NCCL applies its own config file
  // the same way, at its first init).
  static std::once_flag once;
  std::call_once(once, mapEnvironment);
}

}  // namespace loom_nccl
