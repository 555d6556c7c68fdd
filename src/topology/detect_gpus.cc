// GPUs through the CUDA runtime (device order, P2P; the library's handle,
// base/device/cuda_runtime.h) and NVML (names, NVLinks), both opened with
// dlopen. The few NVML declarations needed are written here, so the build
// needs neither the toolkit nor the driver.
#include <algorithm>

#include "core/error.h"
#include "device/cuda_runtime.h"
#include "topology/detect_parts.h"
#include "topology/shared_library.h"

namespace loom::topo::detect {
namespace {

// --- NVML (nvml.h, stable ABI) ----------------------------------------------
using NvmlDevice = void*;
struct NvmlPciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr int kNvmlRemoteSwitch = 2;    // NVML_NVLINK_DEVICE_TYPE_SWITCH

using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlGetCount = int (*)(unsigned*);
using NvmlGetHandleByIndex = int (*)(unsigned, NvmlDevice*);
using NvmlGetHandleByBusId = int (*)(const char*, NvmlDevice*);
using NvmlGetName = int (*)(NvmlDevice, char*, unsigned);
using NvmlGetPciInfo = int (*)(NvmlDevice, NvmlPciInfo*);
using NvmlGetLinkState = int (*)(NvmlDevice, unsigned, int*);
using NvmlGetLinkVersion = int (*)(NvmlDevice, unsigned, unsigned*);
using NvmlGetRemotePci = int (*)(NvmlDevice, unsigned, NvmlPciInfo*);
using NvmlGetRemoteType = int (*)(NvmlDevice, unsigned, int*);

// nvmlDeviceGetNvLinkVersion reports nvmlNvlinkVersion_t on current drivers
// (1: 1.0, 2: 2.0, 3: 2.2, 4: 3.0, 5: 3.1, 6: 4.0, 7: 5.0). Older drivers
// reported the plain major number; both agree on the bandwidth per link for
// every value but 5 (3.1 vs 5.0), which current drivers never report for 5.0.
int nvlinkMajor(unsigned reported) {
  constexpr int kMajor[] = {0, 1, 2, 2, 3, 3, 4, 5};
  return reported < std::size(kMajor) ? kMajor[reported] : 0;
}

class Nvml {
 public:
  Nvml() : lib_({"libnvidia-ml.so.1", "libnvidia-ml.so"}) {
    if (!lib_.loaded()) return;
    auto init = lib_.symbol<NvmlInit>("nvmlInit_v2");
    ready_ = init != nullptr && init() == kNvmlSuccess;
  }
  ~Nvml() {
    if (ready_) {
      if (auto shutdown = lib_.symbol<NvmlShutdown>("nvmlShutdown")) shutdown();
    }
  }
  bool ready() const { return ready_; }
  std::string why() const { return lib_.loaded() ? "nvmlInit failed" : lib_.error(); }

  /// Bus ids in NVML order.
  std::vector<std::string> busIds() const {
    std::vector<std::string> out;
    auto count = lib_.symbol<NvmlGetCount>("nvmlDeviceGetCount_v2");
    auto byIndex = lib_.symbol<NvmlGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
    unsigned n = 0;
    if (count == nullptr || byIndex == nullptr || count(&n) != kNvmlSuccess) return out;
    for (unsigned i = 0; i < n; ++i) {
      NvmlDevice device = nullptr;
      if (byIndex(i, &device) != kNvmlSuccess) continue;
      if (auto bus = busIdOf(device)) out.push_back(*bus);
    }
    return out;
  }

  /// Name and NVLinks of the GPU at `busId`.
  void describe(GpuInfo& gpu) const {
    auto byBus = lib_.symbol<NvmlGetHandleByBusId>("nvmlDeviceGetHandleByPciBusId_v2");
    NvmlDevice device = nullptr;
    if (byBus == nullptr || byBus(gpu.busId.c_str(), &device) != kNvmlSuccess) return;
    char name[96] = {};
    if (auto getName = lib_.symbol<NvmlGetName>("nvmlDeviceGetName");
        getName != nullptr && getName(device, name, sizeof name) == kNvmlSuccess) {
      gpu.name = name;
    }
    auto state = lib_.symbol<NvmlGetLinkState>("nvmlDeviceGetNvLinkState");
    auto version = lib_.symbol<NvmlGetLinkVersion>("nvmlDeviceGetNvLinkVersion");
    auto remotePci = lib_.symbol<NvmlGetRemotePci>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
    auto remoteType = lib_.symbol<NvmlGetRemoteType>("nvmlDeviceGetNvLinkRemoteDeviceType");
    if (state == nullptr || remotePci == nullptr) return;
    for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
      int active = 0;
      if (state(device, link, &active) != kNvmlSuccess || active == 0) continue;
      NvmlPciInfo peer = {};
      if (remotePci(device, link, &peer) != kNvmlSuccess) continue;
      const auto peerBus = normalizeBusId(peer.busId);
      if (!peerBus) continue;
      NvlinkEnd end;
      end.peerBusId = *peerBus;
      int type = -1;
      end.peerIsSwitch = remoteType != nullptr && remoteType(device, link, &type) == kNvmlSuccess &&
                         type == kNvmlRemoteSwitch;
      unsigned reported = 0;
      if (version != nullptr && version(device, link, &reported) == kNvmlSuccess) {
        end.version = nvlinkMajor(reported);
      }
      gpu.nvlinks.push_back(end);
    }
  }

 private:
  std::optional<std::string> busIdOf(NvmlDevice device) const {
    auto pciInfo = lib_.symbol<NvmlGetPciInfo>("nvmlDeviceGetPciInfo_v3");
    NvmlPciInfo info = {};
    if (pciInfo == nullptr || pciInfo(device, &info) != kNvmlSuccess) return std::nullopt;
    return normalizeBusId(info.busId);
  }

  SharedLibrary lib_;
  bool ready_ = false;
};

/// Bus ids in CUDA device order (honours CUDA_VISIBLE_DEVICES), with P2P notes.
std::optional<std::vector<std::string>> cudaBusIds(std::vector<std::string>& notes) {
  // Without the driver the runtime cannot find a device, and loading it anyway
  // costs time and leaves its half-initialised state behind.
  const SharedLibrary driver({"libcuda.so.1"});
  if (!driver.loaded()) {
    notes.push_back(fmt::format("cuda: no driver ({})", driver.error()));
    return std::nullopt;
  }
  // The library's own runtime handle: the runtime the process already has,
  // else CUDA 13, 12 or the unversioned name, as the device paths open it.
  const device::DeviceRuntime& rt = device::deviceRuntime();
  if (rt.library.empty()) {
    notes.push_back(fmt::format("cuda: runtime not found ({})", rt.reason));
    return std::nullopt;
  }
  if (!rt.available || rt.deviceGetPCIBusId == nullptr) {
    notes.push_back(fmt::format("cuda: {} loaded but unusable ({})", rt.library,
                                rt.available ? "no cudaDeviceGetPCIBusId" : rt.reason));
    return std::nullopt;  // NVML may still know the GPUs
  }
  std::vector<std::string> out;
  for (int i = 0; i < rt.deviceCount; ++i) {
    char text[32] = {};
    if (rt.deviceGetPCIBusId(text, sizeof text, i) != 0) continue;
    if (auto bus = normalizeBusId(text)) out.push_back(*bus);
  }
  std::string p2p;
  for (int i = 0; i < rt.deviceCount; ++i) {
    for (int j = 0; j < rt.deviceCount; ++j) {
      int yes = 0;
      if (i != j && rt.deviceCanAccessPeer(&yes, i, j) == 0)
        p2p += fmt::format(" {}->{}:{}", i, j, yes ? "yes" : "no");
    }
  }
  notes.push_back(fmt::format("cuda: {} device(s) via {}{}", out.size(), rt.library,
                              p2p.empty() ? "" : "; p2p" + p2p));
  return out;
}

}  // namespace

GpuScan scanGpus() {
  GpuScan scan;
  const Nvml nvml;
  if (nvml.ready()) {
    scan.notes.push_back("nvml: loaded");
  } else {
    scan.notes.push_back(fmt::format("nvml: not available ({})", nvml.why()));
  }
  std::optional<std::vector<std::string>> order = cudaBusIds(scan.notes);
  if (!order && nvml.ready()) order = nvml.busIds();
  for (const std::string& bus : order.value_or(std::vector<std::string>{})) {
    GpuInfo gpu;
    gpu.busId = bus;
    if (nvml.ready()) nvml.describe(gpu);
    if (gpu.name.empty()) gpu.name = "GPU " + bus;
    scan.gpus.push_back(std::move(gpu));
  }
  if (scan.gpus.empty()) scan.notes.push_back("gpus: no GPU found");
  return scan;
}

}  // namespace loom::topo::detect
