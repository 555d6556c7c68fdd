#include "transports/ibverbs/ibv_devices.h"

#include <fmt/format.h>
#include <infiniband/verbs.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>

#include "core/error.h"

namespace loom {
namespace {

bool isPciAddress(const std::string& s) {
  // sysfs always spells it dddd:bb:dd.f, lower-case hex.
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (std::isxdigit(static_cast<unsigned char>(s[i])) == 0) return false;
  }
  return true;
}

std::string linkLayerName(uint8_t layer) {
  switch (layer) {
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    case IBV_LINK_LAYER_INFINIBAND:
    case IBV_LINK_LAYER_UNSPECIFIED:  // old kernels: only InfiniBand existed
      return "InfiniBand";
    default:
      return fmt::format("link layer {}", layer);
  }
}

std::string widthName(uint32_t widthCode) {
  const int lanes = ibvWidthLanes(widthCode);
  return lanes > 0 ? fmt::format("{}x", lanes) : fmt::format("width code {}", widthCode);
}

IbvDeviceInfo queryDevice(ibv_device* device) {
  IbvDeviceInfo info;
  info.name = ibv_get_device_name(device);
  info.pciAddress = ibvDevicePciAddress(info.name).value_or("");
  std::unique_ptr<ibv_context, int (*)(ibv_context*)> context(ibv_open_device(device),
                                                              ibv_close_device);
  if (!context) {
    info.error = fmt::format("ibv_open_device failed: {}", std::strerror(errno));
    return info;
  }
  ibv_device_attr attr{};
  if (const int rc = ibv_query_device(context.get(), &attr); rc != 0) {
    info.error = fmt::format("ibv_query_device failed: {}", std::strerror(rc));
    return info;
  }
  for (int p = 1; p <= attr.phys_port_cnt; ++p) {
    ibv_port_attr port{};
    if (const int rc = ibv_query_port(context.get(), static_cast<uint8_t>(p), &port); rc != 0) {
      info.error = fmt::format("ibv_query_port({}) failed: {}", p, std::strerror(rc));
      continue;
    }
    IbvPortInfo out;
    out.port = p;
    out.state = ibv_port_state_str(port.state);
    out.active = port.state == IBV_PORT_ACTIVE;
    out.linkLayer = linkLayerName(port.link_layer);
    out.speedCode = port.active_speed;
    out.widthCode = port.active_width;
    out.gbps = ibvPortGbps(out.speedCode, out.widthCode);
    out.lid = port.lid;
    out.mtuBytes = ibvMtuBytes(port.active_mtu);
    info.ports.push_back(std::move(out));
  }
  return info;
}

/// An InfiniBand generation: its name and one lane's signalling rate.
struct Generation {
  std::string_view name;
  double laneGbps;
};

/// The generation of a port's active_speed code (one bit per generation; XDR
/// is beyond uint8_t active_speed, newer verbs report it elsewhere), or
/// nullptr for an unknown code.
const Generation* generationOf(uint32_t speedCode) {
  static constexpr Generation kByBit[] = {{"SDR", 2.5},       {"DDR", 5.0},     {"QDR", 10.0},
                                          {"FDR10", 10.3125}, {"FDR", 14.0625}, {"EDR", 25.78125},
                                          {"HDR", 50.0},      {"NDR", 100.0},   {"XDR", 200.0}};
  const auto bit = static_cast<size_t>(std::countr_zero(speedCode));
  return std::has_single_bit(speedCode) && bit < std::size(kByBit) ? &kByBit[bit] : nullptr;
}

}  // namespace

double ibvLaneGbps(uint32_t speedCode) {
  const Generation* g = generationOf(speedCode);
  return g != nullptr ? g->laneGbps : 0.0;
}

int ibvWidthLanes(uint32_t widthCode) {
  switch (widthCode) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

double ibvPortGbps(uint32_t speedCode, uint32_t widthCode) {
  return ibvLaneGbps(speedCode) * ibvWidthLanes(widthCode);
}

std::string ibvSpeedName(uint32_t speedCode) {
  const Generation* g = generationOf(speedCode);
  return g != nullptr ? std::string(g->name) : fmt::format("speed code {}", speedCode);
}

int ibvMtuBytes(int mtu) { return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0; }

std::optional<std::string> pciAddressInPath(const std::string& resolvedPath) {
  std::optional<std::string> last;
  for (const auto& part : std::filesystem::path(resolvedPath)) {
    if (isPciAddress(part.string())) last = part.string();
  }
  return last;
}

std::optional<std::string> ibvDevicePciAddress(const std::string& device,
                                               const std::string& sysfsRoot) {
  std::error_code error;
  const auto real = std::filesystem::canonical(sysfsRoot + "/" + device + "/device", error);
  if (error) return std::nullopt;
  return pciAddressInPath(real.string());
}

std::vector<IbvDeviceInfo> listIbvDevices() {
  int count = 0;
  // NULL with ENOSYS when the kernel has no RDMA support; an empty list when
  // no provider claims a device. Neither is an error for discovery.
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> list(ibv_get_device_list(&count),
                                                            ibv_free_device_list);
  std::vector<IbvDeviceInfo> devices;
  for (int i = 0; list && i < count; ++i) devices.push_back(queryDevice(list.get()[i]));
  return devices;
}

std::string describeIbvDevices(const std::vector<IbvDeviceInfo>& devices) {
  if (devices.empty()) {
    return "no RDMA devices (libibverbs lists none: no RDMA NIC, no kernel support, or no "
           "provider library)";
  }
  std::string text;
  for (const IbvDeviceInfo& d : devices) {
    const std::string where = d.pciAddress.empty() ? "not on PCI" : d.pciAddress;
    if (!d.error.empty()) text += fmt::format("{} ({}): {}\n", d.name, where, d.error);
    if (d.ports.empty() && d.error.empty())
      text += fmt::format("{} ({}): no ports\n", d.name, where);
    for (const IbvPortInfo& p : d.ports) {
      text += fmt::format("{} ({}) port {}: {} {} {} {} {} Gb/s, lid {}, mtu {}\n", d.name, where,
                          p.port, p.state, p.linkLayer, widthName(p.widthCode),
                          ibvSpeedName(p.speedCode), p.gbps, p.lid, p.mtuBytes);
    }
  }
  if (!text.empty()) text.pop_back();
  return text;
}

IbvPortChoice chooseIbvPort(const std::vector<IbvDeviceInfo>& devices, const std::string& device,
                            int port) {
  if (devices.empty()) {
    raise(ErrorCode::InvalidUsage, "ibverbs transport: no RDMA device on this host ({})",
          describeIbvDevices(devices));
  }
  std::vector<const IbvDeviceInfo*> candidates;
  for (const IbvDeviceInfo& d : devices) {
    if (device.empty() || d.name == device) candidates.push_back(&d);
  }
  if (candidates.empty()) {
    std::vector<std::string> names;
    names.reserve(devices.size());
    for (const IbvDeviceInfo& d : devices) names.push_back(d.name);
    raise(ErrorCode::InvalidArgument, "ibverbs transport: no RDMA device named '{}' (have: {})",
          device, fmt::join(names, ", "));
  }
  for (const IbvDeviceInfo* d : candidates) {
    for (const IbvPortInfo& p : d->ports) {
      if (port != 0 && p.port != port) continue;
      if (p.active) return {d->name, p.port};
      if (port != 0 && !device.empty()) {
        raise(ErrorCode::InvalidUsage,
              "ibverbs transport: port {} of RDMA device {} is {}, not ACTIVE", port, d->name,
              p.state);
      }
    }
    if (port != 0 && !device.empty()) {
      raise(ErrorCode::InvalidArgument, "ibverbs transport: RDMA device {} has no port {}", d->name,
            port);
    }
  }
  raise(ErrorCode::InvalidUsage, "ibverbs transport: no ACTIVE port{} on the RDMA devices: {}",
        port != 0 ? fmt::format(" {}", port) : "", describeIbvDevices(devices));
}

}  // namespace loom
