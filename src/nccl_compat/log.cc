#include "log.h"

#include <strings.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace loom_nccl {
namespace {

bool asksForInfo(const char* variable) {
  const char* value = std::getenv(variable);
  return value != nullptr && (strcasecmp(value, "INFO") == 0 || strcasecmp(value, "TRACE") == 0);
}

}  // namespace

bool infoEnabled() {
  // Read once, like Loom's own level: a log line must not race a setenv.
  static const bool enabled = asksForInfo("NCCL_DEBUG") || asksForInfo("LOOM_DEBUG");
  return enabled;
}

void writeInfo(const std::string& line) {
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  // One fprintf per line, so lines of different threads do not interleave.
  std::fprintf(stderr, "loom-nccl[%s:%d] INFO %s\n", host, static_cast<int>(getpid()),
               line.c_str());
}

}  // namespace loom_nccl
