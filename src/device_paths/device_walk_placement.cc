// Where the plan-walking kernel may run: which ranks share a process and a
// device, whether their walks can all run at once (hardware queues, streams,
// the blocks a device holds), and how many channels each walk gets. Every rank
// answers alike from what all ranks exchanged, so all take the same path.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/log.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"
#include "device_paths/device_walk_parts.h"
#include "topology/ring_search.h"

namespace loom {
namespace {

/// Thread blocks per rank (channels) unless LOOM_NCHANNELS asks otherwise:
/// the most the ring search offers. One block moves about
/// tuner::kKernelChannelGBps, so every NVLink or NVSwitch route the search
/// sees wants at least this many (an H100's 450 GB/s: 48); on an H200, 8
/// ranks on one GPU moved 75 GB/s at 8 channels, 94 at 16.
constexpr auto kDefaultWalkChannels = static_cast<uint32_t>(topo::kMostRings);
/// The default gives way to keep a rank's FIFOs (one per channel and peer)
/// within this much device memory.
constexpr size_t kDefaultArenaBudget = size_t{256} << 20;

/// The legacy default stream (0, or cudaStreamLegacy): work on it waits for
/// every blocking stream of the device, and they for it.
bool legacyStream(uint64_t stream) { return stream == 0 || stream == 1; }

}  // namespace

bool sameProcess(const Comm& comm, int p, int q) {
  return comm.peers[p].pid == comm.peers[q].pid && comm.peers[p].hostId == comm.peers[q].hostId;
}

int32_t streamQueues() {
  // CUDA's default; it reads the variable when it creates the context, which
  // a program sets before its first CUDA call.
  constexpr int32_t kDefault = 8;
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (set == nullptr) return kDefault;
  char* end = nullptr;
  const long value = std::strtol(set, &end, 10);
  if (end == set || *end != '\0' || value < 1) return kDefault;
  return static_cast<int32_t>(std::min<long>(value, 32));
}

int ranksSharingDevice(const Comm& comm, const RankDevices& where, int p) {
  int sharing = 0;
  for (int q = 0; q < comm.nranks; ++q) {
    sharing += sameProcess(comm, p, q) && where.devices[q] == where.devices[p] ? 1 : 0;
  }
  return sharing;
}

bool someRanksShareADevice(const Comm& comm, const RankDevices& where) {
  for (int p = 0; p < comm.nranks; ++p) {
    if (ranksSharingDevice(comm, where, p) > 1) return true;
  }
  return false;
}

std::string crowding(const Comm& comm, const RankDevices& where) {
  const std::vector<int>& devices = where.devices;
  const std::vector<int32_t>& queues = where.queues;
  for (int p = 0; p < comm.nranks; ++p) {
    if (devices[p] < 0) continue;
    const int sharing = ranksSharingDevice(comm, where, p);
    // Each rank's stream takes a queue, and the runtime's own copies others;
    // streams beyond the queues share one, where a walk waiting for its
    // stream's previous walk holds back a peer's walk behind it (seen on an
    // H200: 8 ranks, 3 launches each, at the default 8 queues).
    if (2 * sharing > queues[p]) {
      return fmt::format(
          "{} ranks of one process walk on device {}, more than half of its {} hardware queues "
          "(CUDA_DEVICE_MAX_CONNECTIONS; set it to 32 before the first CUDA call for up to 16 "
          "ranks per device)",
          sharing, devices[p], queues[p]);
    }
  }
  return {};
}

const char* streamConflict(int deviceP, uint64_t streamP, int deviceQ, uint64_t streamQ) {
  if (streamP == streamQ) return "share a stream";
  if (deviceP == deviceQ && (legacyStream(streamP) || legacyStream(streamQ))) {
    return "share a device and one uses the legacy default stream";
  }
  return nullptr;
}

int32_t residentWalkBlocks() {
  int blocks = 0;
  if (device::cudaKernels().table->walkResidentBlocks(&blocks) != 0) {
    device::deviceRuntime().getLastError();
    return 0;
  }
  return blocks;
}

uint32_t walkChannels(const Comm& comm, const RankDevices& where,
                      const std::vector<int32_t>& resident, size_t channelBytes) {
  const bool asked = comm.config.channels.has_value();
  const uint32_t wanted = asked ? static_cast<uint32_t>(*comm.config.channels)
                                : static_cast<uint32_t>(std::clamp<size_t>(
                                      kDefaultArenaBudget / channelBytes, 1, kDefaultWalkChannels));
  uint32_t fit = wanted;
  int tightest = 0;
  for (int p = 0; p < comm.nranks; ++p) {
    const auto at = static_cast<size_t>(p);
    if (where.devices[at] < 0) continue;
    const auto room = static_cast<uint32_t>(std::max<int32_t>(resident[at], 0) /
                                            ranksSharingDevice(comm, where, p));
    if (room < fit) {
      fit = room;
      tightest = p;
    }
  }
  if (fit < wanted && comm.rank == 0) {
    const auto t = static_cast<size_t>(tightest);
    const std::string why = fmt::format(
        "device {} of rank {} runs {} walk blocks at once, shared by {} ranks of its process",
        where.devices[t], tightest, resident[t], ranksSharingDevice(comm, where, tightest));
    if (asked) {
      LOOM_WARN("LOOM_NCHANNELS={}: {}, so each walks {} channel(s)", wanted, why,
                std::max(fit, 1U));
    } else {
      LOOM_INFO("{}: {} channel(s) per rank", why, std::max(fit, 1U));
    }
  }
  return std::max(fit, 1U);
}

}  // namespace loom
