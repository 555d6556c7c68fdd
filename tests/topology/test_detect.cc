#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "core/error.h"
#include "topology/detect.h"
#include "topology/detect_parts.h"
#include "topology/host_summary.h"
#include "topology/topo_file.h"

namespace loom::topo {
namespace {

// Sets (or unsets) an environment variable for one test and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool hasNote(const DetectReport& report, const std::string& text) {
  for (const std::string& note : report.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string allNotes(const DetectReport& report) {
  std::string out;
  for (const std::string& note : report.notes) out += note + "\n";
  return out;
}

TEST(Detect, ThisHostIsAValidGraphWithItsCores) {
  ScopedEnv noFile("LOOM_TOPO_FILE", nullptr);
  DetectReport report;
  const Topology t = detectTopology(&report);
  EXPECT_EQ(t.source, "detected");
  EXPECT_NO_THROW(validateTopology(t));
  ASSERT_EQ(t.nodesOfKind(NodeKind::Host).size(), 1u);
  EXPECT_EQ(t.nodes[t.nodesOfKind(NodeKind::Host)[0]].id, "host0");

  const HostSummary hwloc = detectHostSummary();
  const std::vector<int> cpus = t.nodesOfKind(NodeKind::Cpu);
  ASSERT_GE(cpus.size(), 1u);
  EXPECT_EQ(static_cast<int>(cpus.size()), hwloc.numaNodes);
  int cores = 0;
  for (int cpu : cpus) {
    EXPECT_GE(t.nodes[cpu].cores, 1) << t.nodes[cpu].id;
    cores += t.nodes[cpu].cores;
  }
  EXPECT_EQ(cores, hwloc.cores);
  // Two NUMA nodes or more: every pair has its SMP link.
  int smp = 0;
  for (const Link& l : t.links) smp += l.kind == LinkKind::Smp;
  EXPECT_EQ(smp, static_cast<int>(cpus.size() * (cpus.size() - 1) / 2));
  EXPECT_TRUE(hasNote(report, "hwloc:")) << allNotes(report);
  EXPECT_TRUE(hasNote(report, "detected:")) << allNotes(report);
}

TEST(Detect, SaysSoWhenThereIsNoGpuOrRdmaNic) {
  ScopedEnv noFile("LOOM_TOPO_FILE", nullptr);
  DetectReport report;
  const Topology t = detectTopology(&report);
  const bool noGpu = t.nodesOfKind(NodeKind::Gpu).empty();
  EXPECT_EQ(hasNote(report, "no GPU"), noGpu) << allNotes(report);
  const bool noRdma = !hasNote(report, "rdma: mlx") && !hasNote(report, "Gb/s ACTIVE") &&
                      !std::filesystem::exists("/sys/class/infiniband");
  if (noRdma) {
    EXPECT_TRUE(hasNote(report, "no RDMA NIC")) << allNotes(report);
  }
  EXPECT_TRUE(hasNote(report, "nvml:") && hasNote(report, "cuda:")) << allNotes(report);
  // Every modelled NIC has a PCI location and a network link with a speed.
  for (int nic : t.nodesOfKind(NodeKind::Nic)) {
    EXPECT_FALSE(t.nodes[nic].busId.empty());
    int net = 0;
    for (int l : t.linksOf(nic)) net += t.links[l].kind == LinkKind::Net;
    EXPECT_EQ(net, 1) << t.nodes[nic].id;
  }
}

TEST(Detect, GpusFoundByNvmlAreJoinedByTheirNvlinks) {
  // Two GPUs (bus ids no hwloc here knows, so they hang under a cpu) with two
  // NVLink 4 links to each other, as NVML would report them from both ends.
  detect::GpuScan gpus;
  gpus.gpus.push_back({"0000:1b:00.0", "H100", {}});
  gpus.gpus.push_back({"0000:1c:00.0", "H100", {}});
  for (int link = 0; link < 2; ++link) {
    gpus.gpus[0].nvlinks.push_back({"0000:1c:00.0", false, 4});
    gpus.gpus[1].nvlinks.push_back({"0000:1b:00.0", false, 4});
  }
  std::vector<std::string> notes;
  const Topology t = detect::assembleThisHost(gpus, detect::NicScan{}, notes);
  const auto ids = t.nodesOfKind(NodeKind::Gpu);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(t.nodes[ids[0]].busId, "0000:1b:00.0");
  int nvlinks = 0;
  for (const Link& l : t.links) {
    if (l.kind != LinkKind::NvLink) continue;
    ++nvlinks;
    EXPECT_EQ(l.lanes, 2);  // counted once, from the lower index
    EXPECT_EQ(l.generation, 4);
    EXPECT_TRUE((l.a == ids[0] && l.b == ids[1]) || (l.a == ids[1] && l.b == ids[0]));
  }
  EXPECT_EQ(nvlinks, 1);
}

TEST(Detect, TopoFileReplacesDetection) {
  const std::string file = std::string(LOOM_TOPO_DATA_DIR) + "/dgx1-v100.xml";
  ScopedEnv useFile("LOOM_TOPO_FILE", file.c_str());
  DetectReport report;
  const Topology t = detectTopology(&report);
  EXPECT_TRUE(sameTopology(t, loadTopologyFile(file)));
  EXPECT_EQ(t.nodesOfKind(NodeKind::Gpu).size(), 8u);
  EXPECT_TRUE(hasNote(report, "detection skipped")) << allNotes(report);
  EXPECT_FALSE(hasNote(report, "hwloc:"));
}

TEST(Detect, BadTopoFileIsAnErrorNotAFallback) {
  ScopedEnv useFile("LOOM_TOPO_FILE", "/nonexistent/topology.xml");
  EXPECT_THROW(detectTopology(), Error);
}

TEST(DetectSysfs, NormalizesBusIds) {
  EXPECT_EQ(detect::normalizeBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(detect::normalizeBusId("0000:c3:1f.7"), "0000:c3:1f.7");
  EXPECT_FALSE(detect::normalizeBusId("virtio2"));
  EXPECT_FALSE(detect::normalizeBusId("0000:1b:00.0x"));
  EXPECT_FALSE(detect::normalizeBusId("0000:1b:20.0"));  // device numbers stop at 0x1f
  EXPECT_FALSE(detect::normalizeBusId("pci0000:00"));
}

TEST(DetectSysfs, FindsThePciDeviceBehindASysfsLink) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / fmt::format("loom-sysfs-{}", getpid());
  const fs::path device = root / "devices/pci0000:00/0000:00:03.0/virtio2";
  fs::create_directories(device);
  fs::create_directories(root / "class/net/eth0");
  fs::create_directory_symlink(device, root / "class/net/eth0/device");
  EXPECT_EQ(detect::pciAddressOfSysfsPath((root / "class/net/eth0/device").string()),
            "0000:00:03.0");
  fs::create_directories(root / "devices/virtual/net/lo");
  EXPECT_FALSE(detect::pciAddressOfSysfsPath((root / "devices/virtual/net/lo").string()));
  EXPECT_FALSE(detect::pciAddressOfSysfsPath((root / "missing").string()));
  fs::remove_all(root);
}

}  // namespace
}  // namespace loom::topo
