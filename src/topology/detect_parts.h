// What each detection source reports, before detect.cc assembles the graph.
// Each source is its own file (detect_hwloc.cc, detect_gpus.cc,
// detect_nics.cc); none of them knows about the others or about node ids.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/graph.h"

struct hwloc_topology;

namespace loom::topo::detect {

/// One PCIe link as found in sysfs / hwloc. `bandwidth` is 0 when unknown.
struct PciLink {
  double bandwidth = 0.0;  ///< GB/s per direction
  int generation = 0;      ///< 0 unknown
  int width = 0;           ///< lanes; 0 unknown
};

struct PciSwitchInfo {
  std::string busId;  ///< of the switch's upstream port
  PciLink uplink;     ///< towards the CPU
};

/// Where a PCI device sits: the NUMA node of its root complex and the PCIe
/// switches between the root and the device, root first.
struct PciPlacement {
  int numa = -1;
  /// The host bridge above the tree, as its root bus ("0000:16"); empty if
  /// hwloc shows none.
  std::string hostBridge;
  std::vector<PciSwitchInfo> switches;
  PciLink deviceLink;
};

struct CpuInfo {
  int numa = 0;  ///< NUMA node os index
  int cores = 0;
  std::string model;
};

/// hwloc's view of this host, loaded once with its PCI objects.
class HwlocReader {
 public:
  HwlocReader();  ///< throws SystemError when hwloc cannot load the machine
  ~HwlocReader();
  HwlocReader(const HwlocReader&) = delete;
  HwlocReader& operator=(const HwlocReader&) = delete;

  /// One per NUMA node, in NUMA order.
  std::vector<CpuInfo> cpus() const;
  /// nullopt when hwloc does not list the device (no PCI support, hidden device).
  std::optional<PciPlacement> place(const std::string& busId) const;
  std::string summary() const;

 private:
  hwloc_topology* topology_ = nullptr;
};

struct NvlinkEnd {
  std::string peerBusId;  ///< normalised; a GPU's or an NVSwitch's
  bool peerIsSwitch = false;
  int version = 0;  ///< NVLink version 1..5; 0 unknown
};

struct GpuInfo {
  std::string busId;  ///< normalised "0000:1b:00.0"
  std::string name;
  std::vector<NvlinkEnd> nvlinks;  ///< one per active link
};

/// GPUs in CUDA device order (NVML order without the CUDA runtime).
struct GpuScan {
  std::vector<GpuInfo> gpus;
  std::vector<std::string> notes;
};
GpuScan scanGpus();

struct NicInfo {
  std::string device;  ///< "mlx5_0" or an interface name
  std::string busId;
  std::string fabric;  ///< "infiniband" or "ethernet"
  double gbps = 0.0;   ///< 0 unknown
  std::string state;   ///< port state for RDMA devices, e.g. "ACTIVE"
};

/// RDMA devices (ibverbs) and PCI network interfaces that back none of them.
struct NicScan {
  std::vector<NicInfo> nics;
  std::vector<std::string> notes;
};
NicScan scanNics();

/// This host's graph: hwloc's cpus and PCIe trees with `gpus` and `nics`
/// placed in them (what NVML and sysfs found, or what a test made up).
Topology assembleThisHost(const GpuScan& gpus, const NicScan& nics,
                          std::vector<std::string>& notes);

// --- sysfs helpers (detect_sysfs.cc) ---------------------------------------

/// First line of a small text file, trimmed; nullopt when unreadable.
std::optional<std::string> readLine(const std::string& path);
/// "00000000:1B:00.0" / "0000:1b:00.0" -> "0000:1b:00.0"; nullopt if not a PCI address.
std::optional<std::string> normalizeBusId(const std::string& text);
/// The PCI address a sysfs device path resolves to (its last PCI component).
std::optional<std::string> pciAddressOfSysfsPath(const std::string& path);
/// NUMA node of a PCI device from sysfs; -1 unknown.
int pciNumaNode(const std::string& busId);
/// Current PCIe link (generation, width, bandwidth) of a device from sysfs.
PciLink pciCurrentLink(const std::string& busId);

}  // namespace loom::topo::detect
