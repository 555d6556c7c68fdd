// NICs: RDMA devices listed by libibverbs (opened with dlopen) with port
// state, rate and link layer from sysfs (the files ibverbs itself reads), and
// network interfaces from getifaddrs with their speed from sysfs. Interfaces
// without a PCI device (loopback, bridges, veth, ifb) are reported, not modelled.
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "topology/detect_parts.h"
#include "topology/shared_library.h"

namespace loom::topo::detect {
namespace {

using IbvGetDeviceList = void** (*)(int*);
using IbvFreeDeviceList = void (*)(void**);
using IbvGetDeviceName = const char* (*)(void*);

constexpr double kAssumedSpeedGbps = 10.0;

/// RDMA device names from ibverbs; nullopt when the library is missing.
std::optional<std::vector<std::string>> ibverbsDevices(std::vector<std::string>& notes) {
  const SharedLibrary ibverbs({"libibverbs.so.1", "libibverbs.so"});
  if (!ibverbs.loaded()) {
    notes.push_back(fmt::format("ibverbs: not found ({})", ibverbs.error()));
    return std::nullopt;
  }
  auto list = ibverbs.symbol<IbvGetDeviceList>("ibv_get_device_list");
  auto release = ibverbs.symbol<IbvFreeDeviceList>("ibv_free_device_list");
  auto name = ibverbs.symbol<IbvGetDeviceName>("ibv_get_device_name");
  if (list == nullptr || release == nullptr || name == nullptr) {
    notes.push_back(fmt::format("ibverbs: {} lacks the device-list symbols", ibverbs.name()));
    return std::nullopt;
  }
  int count = 0;
  void** devices = list(&count);
  std::vector<std::string> out;
  for (int i = 0; devices != nullptr && i < count; ++i) out.push_back(name(devices[i]));
  if (devices != nullptr) release(devices);
  notes.push_back(fmt::format("ibverbs: {} RDMA device(s) via {}", out.size(), ibverbs.name()));
  return out;
}

/// Described by its first ACTIVE port, else its first port.
NicInfo rdmaNic(const std::string& device) {
  const std::string base = "/sys/class/infiniband/" + device;
  std::error_code error;
  std::vector<std::string> ports;
  for (const auto& entry : std::filesystem::directory_iterator(base + "/ports", error)) {
    ports.push_back(entry.path().string());
  }
  std::sort(ports.begin(), ports.end());
  NicInfo nic;
  nic.device = device;
  nic.busId = pciAddressOfSysfsPath(base + "/device").value_or("");
  for (const std::string& port : ports) {
    const std::string state = readLine(port + "/state").value_or("");  // "4: ACTIVE"
    const std::string rate = readLine(port + "/rate").value_or("");    // "100 Gb/sec (4X EDR)"
    const std::string layer = readLine(port + "/link_layer").value_or("InfiniBand");
    const bool active = state.find("ACTIVE") != std::string::npos;
    if (!nic.state.empty() && !active) continue;
    nic.state = state.substr(state.find(':') == std::string::npos ? 0 : state.find(':') + 2);
    nic.fabric = layer == "Ethernet" ? "ethernet" : "infiniband";
    std::sscanf(rate.c_str(), "%lf", &nic.gbps);
    if (active) break;
  }
  if (nic.state.empty()) nic.fabric = "infiniband";
  return nic;
}

/// Interface names from getifaddrs, loopback excluded, each once.
std::set<std::string> interfaceNames() {
  std::set<std::string> names;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return names;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name != nullptr && (a->ifa_flags & IFF_LOOPBACK) == 0) names.insert(a->ifa_name);
  }
  freeifaddrs(list);
  return names;
}

}  // namespace

NicScan scanNics() {
  NicScan scan;
  std::vector<std::string> rdma = ibverbsDevices(scan.notes).value_or(std::vector<std::string>{});
  std::set<std::string> rdmaBuses;
  for (const std::string& device : rdma) {
    NicInfo nic = rdmaNic(device);
    if (!nic.busId.empty()) rdmaBuses.insert(nic.busId);
    scan.notes.push_back(fmt::format("rdma: {} {} {} {} Gb/s {}", nic.device, nic.busId, nic.fabric,
                                     nic.gbps, nic.state));
    scan.nics.push_back(std::move(nic));
  }
  if (rdma.empty()) scan.notes.push_back("rdma: no RDMA NIC");
  for (const std::string& name : interfaceNames()) {
    const std::string base = "/sys/class/net/" + name;
    const auto bus = pciAddressOfSysfsPath(base + "/device");
    if (!bus) {
      scan.notes.push_back(fmt::format("net: {} has no PCI device (virtual); not modelled", name));
      continue;
    }
    if (rdmaBuses.count(*bus) != 0) continue;  // the netdev of an RDMA NIC listed above
    NicInfo nic;
    nic.device = name;
    nic.busId = *bus;
    nic.fabric = "ethernet";
    long mbps = -1;
    if (const auto speed = readLine(base + "/speed")) std::sscanf(speed->c_str(), "%ld", &mbps);
    nic.gbps = mbps > 0 ? mbps / 1000.0 : 0.0;
    if (nic.gbps > 0) scan.notes.push_back(fmt::format("net: {} {} {} Gb/s", name, *bus, nic.gbps));
    scan.nics.push_back(std::move(nic));
  }
  // The graph needs a positive speed; a guess is said out loud, not hidden.
  for (NicInfo& nic : scan.nics) {
    if (nic.gbps > 0) continue;
    nic.gbps = kAssumedSpeedGbps;
    scan.notes.push_back(
        fmt::format("net: {} speed unknown, assumed {} Gb/s", nic.device, kAssumedSpeedGbps));
  }
  return scan;
}

}  // namespace loom::topo::detect
