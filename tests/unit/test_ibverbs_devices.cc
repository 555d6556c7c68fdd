#if LOOM_HAVE_IBVERBS
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "core/error.h"
#include "transports/ibverbs/ibv_devices.h"

namespace loom {
namespace {

TEST(IbvDevices, LaneRatesFollowTheSpec) {
  EXPECT_DOUBLE_EQ(ibvLaneGbps(1), 2.5);        // SDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(2), 5.0);        // DDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(4), 10.0);       // QDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(8), 10.3125);    // FDR10
  EXPECT_DOUBLE_EQ(ibvLaneGbps(16), 14.0625);   // FDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(32), 25.78125);  // EDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(64), 50.0);      // HDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(128), 100.0);    // NDR
  EXPECT_DOUBLE_EQ(ibvLaneGbps(256), 200.0);    // XDR
  for (uint32_t bad : {0u, 3u, 5u, 31u, 512u}) EXPECT_EQ(ibvLaneGbps(bad), 0.0) << bad;
}

TEST(IbvDevices, WidthCodes) {
  EXPECT_EQ(ibvWidthLanes(1), 1);
  EXPECT_EQ(ibvWidthLanes(2), 4);
  EXPECT_EQ(ibvWidthLanes(4), 8);
  EXPECT_EQ(ibvWidthLanes(8), 12);
  EXPECT_EQ(ibvWidthLanes(16), 2);
  for (uint32_t bad : {0u, 3u, 32u}) EXPECT_EQ(ibvWidthLanes(bad), 0) << bad;
}

TEST(IbvDevices, PortRates) {
  EXPECT_DOUBLE_EQ(ibvPortGbps(4, 2), 40.0);      // QDR 4x
  EXPECT_DOUBLE_EQ(ibvPortGbps(16, 2), 56.25);    // FDR 4x
  EXPECT_DOUBLE_EQ(ibvPortGbps(32, 2), 103.125);  // EDR 4x
  EXPECT_DOUBLE_EQ(ibvPortGbps(64, 2), 200.0);    // HDR 4x
  EXPECT_DOUBLE_EQ(ibvPortGbps(128, 2), 400.0);   // NDR 4x
  EXPECT_DOUBLE_EQ(ibvPortGbps(128, 16), 200.0);  // NDR 2x
  EXPECT_DOUBLE_EQ(ibvPortGbps(1, 8), 30.0);      // SDR 12x
  EXPECT_DOUBLE_EQ(ibvPortGbps(256, 4), 1600.0);  // XDR 8x
  EXPECT_DOUBLE_EQ(ibvPortGbps(64, 3), 0.0);      // unknown width
  EXPECT_DOUBLE_EQ(ibvPortGbps(7, 2), 0.0);       // unknown speed
  EXPECT_EQ(ibvSpeedName(64), "HDR");
  EXPECT_EQ(ibvSpeedName(8), "FDR10");
  EXPECT_EQ(ibvSpeedName(3), "speed code 3");
}

TEST(IbvDevices, MtuBytes) {
  EXPECT_EQ(ibvMtuBytes(1), 256);
  EXPECT_EQ(ibvMtuBytes(3), 1024);
  EXPECT_EQ(ibvMtuBytes(5), 4096);
  EXPECT_EQ(ibvMtuBytes(0), 0);
  EXPECT_EQ(ibvMtuBytes(6), 0);
}

TEST(IbvDevices, PciAddressIsTheDeepestPciComponent) {
  EXPECT_EQ(pciAddressInPath("/sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(pciAddressInPath("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/infiniband/mlx5_1"),
            "0000:3b:00.1");
  EXPECT_EQ(pciAddressInPath("/sys/devices/virtual/net/rxe0"), std::nullopt);
  EXPECT_EQ(pciAddressInPath("/sys/devices/pci0000:00"), std::nullopt);
  EXPECT_EQ(pciAddressInPath("/x/0000:3b:00.g"), std::nullopt);
  EXPECT_EQ(pciAddressInPath("/x/00000:3b:00.0"), std::nullopt);
}

// A miniature sysfs: class/infiniband/<dev>/device is a symlink into devices/.
TEST(IbvDevices, PciAddressThroughSysfsSymlink) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("loom_ibv_sysfs_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path pci = root / "devices/pci0000:00/0000:00:02.0/0000:af:00.1";
  fs::create_directories(pci);
  fs::create_directories(root / "class/infiniband/mlx5_3");
  fs::create_directory_symlink(pci, root / "class/infiniband/mlx5_3/device");
  fs::create_directories(root / "devices/virtual/rxe0");
  fs::create_directories(root / "class/infiniband/rxe0");
  fs::create_directory_symlink(root / "devices/virtual/rxe0",
                               root / "class/infiniband/rxe0/device");
  const std::string cls = (root / "class/infiniband").string();
  EXPECT_EQ(ibvDevicePciAddress("mlx5_3", cls), "0000:af:00.1");
  EXPECT_EQ(ibvDevicePciAddress("rxe0", cls), std::nullopt);
  EXPECT_EQ(ibvDevicePciAddress("missing", cls), std::nullopt);
  fs::remove_all(root);
}

TEST(IbvDevices, ListingNeverThrowsAndDescribesItself) {
  std::vector<IbvDeviceInfo> devices;
  ASSERT_NO_THROW(devices = listIbvDevices());
  const std::string text = describeIbvDevices(devices);
  if (devices.empty()) {
    EXPECT_NE(text.find("no RDMA devices"), std::string::npos) << text;
  } else {
    for (const auto& d : devices) EXPECT_NE(text.find(d.name), std::string::npos) << text;
  }
}

std::vector<IbvDeviceInfo> fakeDevices() {
  IbvPortInfo down{1, "DOWN", false, "Ethernet", 0, 0, 0, 0, 1024};
  IbvPortInfo hdr{2, "ACTIVE", true, "InfiniBand", 64, 2, 200, 7, 4096};
  IbvPortInfo edr{1, "ACTIVE", true, "InfiniBand", 32, 2, 103.125, 9, 4096};
  return {{"mlx5_0", "0000:3b:00.0", {down, hdr}, ""},
          {"mlx5_1", "", {edr}, ""},
          {"broken0", "0000:5e:00.0", {}, "ibv_open_device failed: Permission denied"}};
}

TEST(IbvDevices, DescribesEveryPort) {
  const std::string text = describeIbvDevices(fakeDevices());
  EXPECT_NE(text.find("mlx5_0 (0000:3b:00.0) port 1: DOWN Ethernet"), std::string::npos) << text;
  EXPECT_NE(text.find("mlx5_0 (0000:3b:00.0) port 2: ACTIVE InfiniBand 4x HDR 200 Gb/s, lid 7, "
                      "mtu 4096"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mlx5_1 (not on PCI) port 1: ACTIVE InfiniBand 4x EDR 103.125 Gb/s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("broken0 (0000:5e:00.0): ibv_open_device failed: Permission denied"),
            std::string::npos)
      << text;
}

ErrorCode codeOf(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const Error& e) {
    *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no exception";
  return ErrorCode::InternalError;
}

TEST(IbvDevices, ChoosesTheFirstActivePort) {
  const auto devices = fakeDevices();
  const IbvPortChoice any = chooseIbvPort(devices, "", 0);
  EXPECT_EQ(any.device, "mlx5_0");
  EXPECT_EQ(any.port, 2);
  const IbvPortChoice named = chooseIbvPort(devices, "mlx5_1", 0);
  EXPECT_EQ(named.device, "mlx5_1");
  EXPECT_EQ(named.port, 1);
  const IbvPortChoice skipDown = chooseIbvPort(devices, "mlx5_0", 0);
  EXPECT_EQ(skipDown.device, "mlx5_0");
  EXPECT_EQ(skipDown.port, 2);
  const IbvPortChoice port1 = chooseIbvPort(devices, "", 1);  // mlx5_0 port 1 is down
  EXPECT_EQ(port1.device, "mlx5_1");
}

TEST(IbvDevices, RefusesWhatCannotBeUsed) {
  std::string message;
  EXPECT_EQ(codeOf([] { chooseIbvPort({}, "", 0); }, &message), ErrorCode::InvalidUsage);
  EXPECT_NE(message.find("no RDMA device"), std::string::npos) << message;
  const auto devices = fakeDevices();
  EXPECT_EQ(codeOf([&] { chooseIbvPort(devices, "mlx5_9", 0); }, &message),
            ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("'mlx5_9' (have: mlx5_0, mlx5_1, broken0)"), std::string::npos) << message;
  EXPECT_EQ(codeOf([&] { chooseIbvPort(devices, "mlx5_0", 1); }, &message),
            ErrorCode::InvalidUsage);
  EXPECT_NE(message.find("port 1 of RDMA device mlx5_0 is DOWN"), std::string::npos) << message;
  EXPECT_EQ(codeOf([&] { chooseIbvPort(devices, "mlx5_1", 2); }, &message),
            ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("mlx5_1 has no port 2"), std::string::npos) << message;
  EXPECT_EQ(codeOf([&] { chooseIbvPort(devices, "broken0", 0); }, &message),
            ErrorCode::InvalidUsage);
  EXPECT_NE(message.find("no ACTIVE port"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
