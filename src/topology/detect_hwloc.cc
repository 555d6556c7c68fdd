// hwloc: NUMA nodes (one Cpu each), their cores and CPU model, and where a
// PCI device hangs in the PCIe tree.
#include <hwloc.h>

#include "core/error.h"
#include "topology/detect_parts.h"
#include "topology/shared_library.h"

namespace loom::topo::detect {
namespace {

using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

std::string busIdOf(const PciAttr& pci) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
}

// The link above a PCI object: exact generation and width from sysfs when the
// kernel reports them, else hwloc's GB/s figure.
PciLink linkAbove(const PciAttr& pci) {
  PciLink link = pciCurrentLink(busIdOf(pci));
  if (link.bandwidth <= 0 && pci.linkspeed > 0) link.bandwidth = pci.linkspeed;
  return link;
}

bool isPciToPciBridge(hwloc_obj_t obj) {
  return obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

int numaOf(hwloc_topology_t topology, hwloc_obj_t obj) {
  const hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topology, obj);
  if (anchor == nullptr || anchor->nodeset == nullptr) return -1;
  const int first = hwloc_bitmap_first(anchor->nodeset);
  return first < 0 ? -1 : first;
}

}  // namespace

HwlocReader::HwlocReader() {
  // hwloc reads the PCI bus through a plugin built on libpciaccess, which it
  // unloads again; libpciaccess keeps what it allocates in its globals. Kept
  // mapped (NODELETE), that state stays reachable instead of being stranded
  // (LeakSanitizer would report it) and is not rebuilt on the next load.
  static_cast<void>(SharedLibrary({"libpciaccess.so.0"}));
  if (hwloc_topology_init(&topology_) != 0) raiseErrno("hwloc_topology_init");
  // Bridges and PCI devices are needed for the PCIe tree; OS devices are not.
  hwloc_topology_set_type_filter(topology_, HWLOC_OBJ_BRIDGE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_type_filter(topology_, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_type_filter(topology_, HWLOC_OBJ_OS_DEVICE, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(topology_) != 0) {
    hwloc_topology_destroy(topology_);
    topology_ = nullptr;
    raiseErrno("hwloc_topology_load");
  }
}

HwlocReader::~HwlocReader() {
  if (topology_ != nullptr) hwloc_topology_destroy(topology_);
}

std::vector<CpuInfo> HwlocReader::cpus() const {
  std::vector<CpuInfo> out;
  const int numaNodes = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numaNodes; ++i) {
    const hwloc_obj_t numa = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_NUMANODE, i);
    CpuInfo cpu;
    cpu.numa = static_cast<int>(numa->os_index);
    cpu.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topology_, numa->cpuset, HWLOC_OBJ_CORE);
    const hwloc_obj_t package = hwloc_get_next_obj_covering_cpuset_by_type(
        topology_, numa->cpuset, HWLOC_OBJ_PACKAGE, nullptr);
    if (package != nullptr) {
      const char* model = hwloc_obj_get_info_by_name(package, "CPUModel");
      if (model != nullptr) cpu.model = model;
    }
    out.push_back(cpu);
  }
  return out;
}

// hwloc shows a PCIe switch as an upstream-port bridge whose children are
// downstream-port bridges; a device on a CPU root port sits below one bridge
// (the root port) under the host bridge. So below the host bridge: the first
// PCI-PCI bridge is a root port (part of the CPU), then bridges pair up as
// (upstream port, downstream port) = one switch. A heuristic: platforms that
// hide root ports make the first switch look like a root port.
std::optional<PciPlacement> HwlocReader::place(const std::string& busId) const {
  const hwloc_obj_t device = hwloc_get_pcidev_by_busidstring(topology_, busId.c_str());
  if (device == nullptr) return std::nullopt;
  std::vector<hwloc_obj_t> bridges;  // device upwards
  hwloc_obj_t up = device->parent;
  for (; up != nullptr && isPciToPciBridge(up); up = up->parent) bridges.push_back(up);
  PciPlacement placement;
  if (up != nullptr && up->type == HWLOC_OBJ_BRIDGE &&
      up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST &&
      up->attr->bridge.downstream_type == HWLOC_OBJ_BRIDGE_PCI) {
    const auto& root = up->attr->bridge.downstream.pci;
    placement.hostBridge = fmt::format("{:04x}:{:02x}", root.domain, root.secondary_bus);
  }
  placement.numa = numaOf(topology_, device);
  placement.deviceLink = linkAbove(device->attr->pcidev);
  for (size_t fromRoot = 1; fromRoot < bridges.size(); fromRoot += 2) {
    const hwloc_obj_t upstreamPort = bridges[bridges.size() - 1 - fromRoot];
    const PciAttr& pci = upstreamPort->attr->bridge.upstream.pci;
    placement.switches.push_back({busIdOf(pci), linkAbove(pci)});
  }
  return placement;
}

std::string HwlocReader::summary() const {
  auto count = [&](hwloc_obj_type_t type) {
    return std::max(0, hwloc_get_nbobjs_by_type(topology_, type));
  };
  return fmt::format("hwloc: {} package(s), {} NUMA node(s), {} core(s), {} PCI device(s)",
                     count(HWLOC_OBJ_PACKAGE), count(HWLOC_OBJ_NUMANODE), count(HWLOC_OBJ_CORE),
                     count(HWLOC_OBJ_PCI_DEVICE));
}

}  // namespace loom::topo::detect
