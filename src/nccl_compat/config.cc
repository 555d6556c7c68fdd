#include "config.h"

#include <fmt/ranges.h>

#include <cstddef>
#include <string>
#include <vector>

#include "log.h"
#include "status.h"

namespace loom_nccl {
namespace {

struct IntField {
  const char* name;
  int ncclConfig_t::*member;
};

constexpr IntField kIgnoredInts[] = {
    {"cgaClusterSize", &ncclConfig_t::cgaClusterSize},
    {"minCTAs", &ncclConfig_t::minCTAs},
    {"maxCTAs", &ncclConfig_t::maxCTAs},
    {"splitShare", &ncclConfig_t::splitShare},
    {"trafficClass", &ncclConfig_t::trafficClass},
    {"collnetEnable", &ncclConfig_t::collnetEnable},
    {"CTAPolicy", &ncclConfig_t::CTAPolicy},
    {"shrinkShare", &ncclConfig_t::shrinkShare},
    {"nvlsCTAs", &ncclConfig_t::nvlsCTAs},
    {"nChannelsPerNetPeer", &ncclConfig_t::nChannelsPerNetPeer},
    {"nvlinkCentricSched", &ncclConfig_t::nvlinkCentricSched},
};

/// Whether `field` lies within the `size` bytes the caller's struct declared:
/// a program built against an older nccl.h passes a shorter config.
template <typename Field>
bool present(const ncclConfig_t& config, const Field& field) {
  const auto offset = static_cast<size_t>(reinterpret_cast<const char*>(&field) -
                                          reinterpret_cast<const char*>(&config));
  return offset + sizeof(Field) <= config.size;
}

}  // namespace

void checkConfig(const ncclConfig_t* config) {
  if (config == nullptr) return;
  const ncclConfig_t initialized = NCCL_CONFIG_INITIALIZER;
  // A larger size is a newer header's config: its extra fields are ignored too.
  if (config->magic != initialized.magic || config->size < offsetof(ncclConfig_t, blocking)) {
    fail(ncclInvalidArgument,
         "config was not set up with NCCL_CONFIG_INITIALIZER (magic {:#x}, size {})", config->magic,
         config->size);
  }
  if (present(*config, config->blocking)) {
    const int blocking = config->blocking;
    if (blocking != NCCL_CONFIG_UNDEF_INT && blocking != 0 && blocking != 1) {
      fail(ncclInvalidArgument, "config.blocking={} is not 0 or 1", blocking);
    }
    if (blocking == 0) {
      logInfo("config.blocking=0: Loom completes every call before it returns");
    }
  }
  std::vector<std::string> ignored;
  for (const IntField& f : kIgnoredInts) {
    const int& value = config->*f.member;
    if (present(*config, value) && value != NCCL_CONFIG_UNDEF_INT) {
      ignored.push_back(fmt::format("{}={}", f.name, value));
    }
  }
  if (present(*config, config->netName) && config->netName != nullptr) {
    ignored.push_back(fmt::format("netName={}", config->netName));
  }
  if (present(*config, config->commName) && config->commName != nullptr) {
    logInfo("creating communicator '{}'", config->commName);
  }
  if (!ignored.empty()) {
    logInfo("config fields without a Loom meaning ignored: {}", fmt::join(ignored, ", "));
  }
}

}  // namespace loom_nccl
