// RDMA device discovery: which devices libibverbs sees, their ports (state,
// link layer, speed) and where they sit on PCI. Used to explain why the
// ibverbs transport can or cannot run here, and by whoever picks a NIC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom {

struct IbvPortInfo {
  int port = 0;       ///< 1-based, as verbs numbers ports
  std::string state;  ///< "ACTIVE", "DOWN", ... (ibv_port_state_str)
  bool active = false;
  std::string linkLayer;   ///< "InfiniBand" or "Ethernet" (RoCE)
  uint32_t speedCode = 0;  ///< ibv_port_attr::active_speed
  uint32_t widthCode = 0;  ///< ibv_port_attr::active_width
  double gbps = 0;         ///< ibvPortGbps(speedCode, widthCode); 0 if unknown
  uint16_t lid = 0;
  int mtuBytes = 0;  ///< active MTU
};

struct IbvDeviceInfo {
  std::string name;        ///< "mlx5_0"
  std::string pciAddress;  ///< "0000:3b:00.0"; empty if not a PCI device
  std::vector<IbvPortInfo> ports;
  std::string error;  ///< why the device could not be opened or queried; empty if it could
};

/// Every RDMA device libibverbs lists. Empty, never an exception, when there
/// are none: no provider library, no kernel support, or no hardware.
std::vector<IbvDeviceInfo> listIbvDevices();

/// One line per port, or a sentence saying there are no RDMA devices.
std::string describeIbvDevices(const std::vector<IbvDeviceInfo>& devices);

/// Signalling rate of one lane in Gb/s for an ibv_port_attr::active_speed code
/// (SDR 2.5 ... XDR 200); 0 for an unknown code. These are the IB spec's lane
/// rates: data rates are lower by the line code (8b/10b to QDR, 64b/66b after).
double ibvLaneGbps(uint32_t speedCode);
/// Lanes for an ibv_port_attr::active_width code (1x, 4x, 8x, 12x, 2x); 0 if unknown.
int ibvWidthLanes(uint32_t widthCode);
/// Lane rate times lanes; 0 if either code is unknown.
double ibvPortGbps(uint32_t speedCode, uint32_t widthCode);
/// "SDR" ... "XDR", or "speed code N".
std::string ibvSpeedName(uint32_t speedCode);
/// Bytes of an enum ibv_mtu value (1 -> 256 ... 5 -> 4096); 0 if not one.
int ibvMtuBytes(int mtu);

/// The PCI address ("dddd:bb:dd.f") closest to the device in a resolved sysfs
/// path such as /sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0/infiniband/mlx5_0.
std::optional<std::string> pciAddressInPath(const std::string& resolvedPath);
/// Resolves <sysfsRoot>/<device>/device (a symlink into the PCI tree) and
/// returns its PCI address; nullopt for a virtual device or a missing entry.
std::optional<std::string> ibvDevicePciAddress(
    const std::string& device, const std::string& sysfsRoot = "/sys/class/infiniband");

/// The device and port a transport should use: `device` (empty: the first
/// device with an ACTIVE port) and `port` (0: its first ACTIVE port). Throws
/// InvalidUsage "no RDMA device ..." for an empty list, InvalidArgument for a
/// device or port that does not exist, InvalidUsage when the port is not ACTIVE.
struct IbvPortChoice {
  std::string device;
  int port = 0;
};
IbvPortChoice chooseIbvPort(const std::vector<IbvDeviceInfo>& devices, const std::string& device,
                            int port);

}  // namespace loom
