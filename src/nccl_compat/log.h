// The shim's own INFO lines. Loom's logger is internal to libloom, so the shim
// writes to stderr itself, in the same shape ("loom-nccl[host:pid] INFO ..."),
// when NCCL_DEBUG or LOOM_DEBUG asks for INFO or TRACE.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

namespace loom_nccl {

/// Whether INFO lines are wanted; decided once, from the environment at the first call.
bool infoEnabled();
void writeInfo(const std::string& line);

template <typename... Args>
void logInfo(fmt::format_string<Args...> format, Args&&... args) {
  if (infoEnabled()) writeInfo(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace loom_nccl
