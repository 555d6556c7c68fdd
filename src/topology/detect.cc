// Assembles this host's graph from the detection sources: one Cpu per NUMA
// node (hwloc), the PCIe switches above each GPU and NIC, NVLinks (NVML) and
// one Fabric per link layer the NICs are on.
#include "topology/detect.h"

#include <unistd.h>

#include <map>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "topology/detect_parts.h"
#include "topology/topo_file.h"

namespace loom::topo {
namespace {

using detect::PciLink;

constexpr const char* kHostId = "host0";

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

class HostAssembler {
 public:
  HostAssembler(const detect::HwlocReader& hwloc, std::vector<std::string>& notes)
      : hwloc_(hwloc), notes_(notes) {
    topology_.source = "detected";
    Node host;
    host.kind = NodeKind::Host;
    host.id = kHostId;
    host.name = hostName();
    host_ = topology_.addNode(std::move(host));
  }

  void addCpus(const std::vector<detect::CpuInfo>& cpus) {
    for (const detect::CpuInfo& info : cpus) {
      Node cpu = member(NodeKind::Cpu, fmt::format("{}/cpu{}", kHostId, info.numa));
      cpu.numa = info.numa;
      cpu.cores = info.cores;
      cpu.name = info.model;
      const int index = topology_.addNode(std::move(cpu));
      link(index, host_, LinkKind::Host, 0.0);
      cpuByNuma_[info.numa] = index;
    }
    // Every pair of NUMA nodes talks over the SMP interconnect; its speed is
    // not something hwloc reports, so the typical figure stands in.
    for (auto a = cpuByNuma_.begin(); a != cpuByNuma_.end(); ++a) {
      for (auto b = std::next(a); b != cpuByNuma_.end(); ++b) {
        link(a->second, b->second, LinkKind::Smp, typicalSmpBandwidth());
      }
    }
  }

  void addGpus(const std::vector<detect::GpuInfo>& gpus) {
    std::map<std::string, int> gpuByBus;
    for (size_t i = 0; i < gpus.size(); ++i) {
      Node gpu = member(NodeKind::Gpu, fmt::format("{}/gpu{}", kHostId, i));
      gpu.name = gpus[i].name;
      gpu.busId = gpus[i].busId;
      // The right side of `=` runs first (C++17), so the key must not come
      // from the node it moves.
      gpuByBus[gpus[i].busId] = attachPci(std::move(gpu));
    }
    // lanes and version per (gpu, peer); each GPU-GPU link is reported by both
    // ends, so it is counted from the lower node index only.
    std::map<std::pair<int, int>, std::pair<int, int>> bonds;
    for (const detect::GpuInfo& info : gpus) {
      const int gpu = gpuByBus.at(info.busId);
      for (const detect::NvlinkEnd& end : info.nvlinks) {
        int peer = -1;
        if (end.peerIsSwitch) {
          peer = findOrAdd(NodeKind::NvSwitch,
                           fmt::format("{}/nvswitch-{}", kHostId, end.peerBusId), end.peerBusId);
        } else if (auto it = gpuByBus.find(end.peerBusId);
                   it != gpuByBus.end() && gpu < it->second) {
          peer = it->second;
        }
        if (peer < 0) continue;
        auto& [lanes, version] = bonds[{gpu, peer}];
        ++lanes;
        version = std::max(version, end.version);
      }
    }
    for (const auto& [ends, bond] : bonds) {
      const auto [lanes, version] = bond;
      // Unknown versions count 25 GB/s per link, what NVLink 2 to 4 all carry.
      const double bandwidth = nvlinkBandwidth(version > 0 ? version : 2, lanes);
      const int l = link(ends.first, ends.second, LinkKind::NvLink, bandwidth);
      topology_.links[l].lanes = lanes;
      topology_.links[l].generation = version;
    }
  }

  void addNics(const std::vector<detect::NicInfo>& nics) {
    for (const detect::NicInfo& info : nics) {
      if (info.busId.empty()) {
        notes_.push_back(fmt::format("net: {} has no PCI location; not modelled", info.device));
        continue;
      }
      Node nic = member(NodeKind::Nic, fmt::format("{}/{}", kHostId, info.device));
      nic.name = info.device;
      nic.busId = info.busId;
      const int index = attachPci(std::move(nic));
      const int fabric = findOrAdd(NodeKind::Fabric, info.fabric, "");
      link(index, fabric, LinkKind::Net, netBandwidthFromGbps(info.gbps));
    }
  }

  Topology take() { return std::move(topology_); }

 private:
  Node member(NodeKind kind, std::string id) const {
    Node node;
    node.kind = kind;
    node.id = std::move(id);
    node.host = host_;
    return node;
  }

  int link(int a, int b, LinkKind kind, double bandwidth) {
    Link l;
    l.a = a;
    l.b = b;
    l.kind = kind;
    l.bandwidth = bandwidth;
    l.latency = typicalLatency(kind);
    return topology_.addLink(l);
  }

  int pcieLink(int up, int down, PciLink found, const std::string& busId) {
    if (found.bandwidth <= 0) {
      notes_.push_back(
          fmt::format("pcie: link above {} has no reported speed; assumed gen3 x16", busId));
      found.bandwidth = pcieBandwidth(3, 16);
    }
    const int l = link(up, down, LinkKind::Pcie, found.bandwidth);
    topology_.links[l].lanes = std::max(1, found.width);
    topology_.links[l].generation = found.generation;
    return l;
  }

  int findOrAdd(NodeKind kind, const std::string& id, const std::string& busId) {
    if (auto it = byId_.find(id); it != byId_.end()) return it->second;
    Node node = kind == NodeKind::Fabric ? Node{} : member(kind, id);
    node.kind = kind;
    node.id = id;
    node.busId = busId;
    return byId_[id] = topology_.addNode(std::move(node));
  }

  int cpuFor(int numa) const {
    const auto it = cpuByNuma_.find(numa);
    return it != cpuByNuma_.end() ? it->second : cpuByNuma_.begin()->second;
  }

  // Adds a GPU or NIC below the PCIe switches hwloc shows above it, or right
  // under the CPU of its NUMA node when hwloc does not list it.
  int attachPci(Node device) {
    const std::string busId = device.busId;
    const std::optional<detect::PciPlacement> place = hwloc_.place(busId);
    device.numa = place && place->numa >= 0 ? place->numa : detect::pciNumaNode(busId);
    int parent = cpuFor(device.numa);
    const int cpu = parent;
    // The link that starts a tree at the cpu names the host bridge above it.
    auto nameBridge = [&](int link) {
      if (place && parent == cpu) topology_.links[link].bridge = place->hostBridge;
    };
    if (place) {
      for (const detect::PciSwitchInfo& sw : place->switches) {
        const std::string id = fmt::format("{}/pci-{}", kHostId, sw.busId);
        const bool known = byId_.count(id) != 0;
        const int node = findOrAdd(NodeKind::PciSwitch, id, sw.busId);
        if (!known) nameBridge(pcieLink(parent, node, sw.uplink, sw.busId));
        parent = node;
      }
    }
    const int index = topology_.addNode(std::move(device));
    nameBridge(
        pcieLink(parent, index, place ? place->deviceLink : detect::pciCurrentLink(busId), busId));
    return index;
  }

  const detect::HwlocReader& hwloc_;
  std::vector<std::string>& notes_;
  Topology topology_;
  int host_ = -1;
  std::map<int, int> cpuByNuma_;
  std::map<std::string, int> byId_;
};

}  // namespace

Topology detect::assembleThisHost(const GpuScan& gpus, const NicScan& nics,
                                  std::vector<std::string>& notes) {
  const detect::HwlocReader hwloc;
  notes.push_back(hwloc.summary());
  std::vector<detect::CpuInfo> cpus = hwloc.cpus();
  if (cpus.empty()) raise(ErrorCode::SystemError, "hwloc reports no NUMA node on this host");
  notes.insert(notes.end(), gpus.notes.begin(), gpus.notes.end());
  notes.insert(notes.end(), nics.notes.begin(), nics.notes.end());

  HostAssembler assembler(hwloc, notes);
  assembler.addCpus(cpus);
  assembler.addGpus(gpus.gpus);
  assembler.addNics(nics.nics);
  Topology topology = assembler.take();
  validateTopology(topology);  // a detection bug must not pass as a machine
  notes.push_back(fmt::format(
      "detected: {} cpu(s), {} GPU(s), {} NIC(s)", topology.nodesOfKind(NodeKind::Cpu).size(),
      topology.nodesOfKind(NodeKind::Gpu).size(), topology.nodesOfKind(NodeKind::Nic).size()));
  return topology;
}

Topology detectTopology(DetectReport* report) {
  std::vector<std::string> notes;
  Topology topology;
  if (const auto file = envString("LOOM_TOPO_FILE")) {
    topology = loadTopologyFile(*file);
    notes.push_back(fmt::format("LOOM_TOPO_FILE={}: loaded; detection skipped", *file));
  } else {
    topology = detect::assembleThisHost(detect::scanGpus(), detect::scanNics(), notes);
  }
  for (const std::string& note : notes) LOOM_INFO("topology: {}", note);
  if (report != nullptr) report->notes = std::move(notes);
  return topology;
}

}  // namespace loom::topo
