#include <gtest/gtest.h>

#include "core/error.h"
#include "graph_builder.h"
#include "topology/paths.h"
#include "topology/topo_file.h"

namespace loom::topo {
namespace {

using testing::GraphBuilder;

Topology reference(const char* name) {
  return loadTopologyFile(std::string(LOOM_TOPO_DATA_DIR) + "/" + name);
}

std::vector<int> gpusThenNics(const Topology& t) {
  std::vector<int> out = t.nodesOfKind(NodeKind::Gpu);
  const std::vector<int> nics = t.nodesOfKind(NodeKind::Nic);
  out.insert(out.end(), nics.begin(), nics.end());
  return out;
}

// Two sockets joined by an SMP link; under socket 0 a top switch with two
// switches below it (gpu0, gpu1 | gpu2) and a second root switch (gpu3, nic0);
// socket 1 has one switch with gpu4 and nic1.
struct TwoSocketBox {
  GraphBuilder b;
  int host, cpu0, cpu1, top, swA, swB, swC, swD, gpu[5], nic0, nic1;
  TwoSocketBox() {
    host = b.host("h");
    cpu0 = b.cpu(host, "h/cpu0", 0);
    cpu1 = b.cpu(host, "h/cpu1", 1);
    b.link(cpu0, cpu1, LinkKind::Smp, 20, 0.5);
    top = b.node(NodeKind::PciSwitch, host, "h/top");
    swA = b.node(NodeKind::PciSwitch, host, "h/swA");
    swB = b.node(NodeKind::PciSwitch, host, "h/swB");
    swC = b.node(NodeKind::PciSwitch, host, "h/swC");
    swD = b.node(NodeKind::PciSwitch, host, "h/swD");
    for (int i = 0; i < 5; ++i) gpu[i] = b.node(NodeKind::Gpu, host, "h/gpu" + std::to_string(i));
    nic0 = b.node(NodeKind::Nic, host, "h/nic0");
    nic1 = b.node(NodeKind::Nic, host, "h/nic1");
    b.link(cpu0, top, LinkKind::Pcie, 32, 0.1);
    b.link(top, swA, LinkKind::Pcie, 32, 0.1);
    b.link(top, swB, LinkKind::Pcie, 32, 0.1);
    b.link(swA, gpu[0], LinkKind::Pcie, 16, 0.1);
    b.link(swA, gpu[1], LinkKind::Pcie, 8, 0.1);
    b.link(swB, gpu[2], LinkKind::Pcie, 16, 0.1);
    b.link(cpu0, swC, LinkKind::Pcie, 16, 0.1);
    b.link(swC, gpu[3], LinkKind::Pcie, 16, 0.1);
    b.link(swC, nic0, LinkKind::Pcie, 16, 0.1);
    b.link(cpu1, swD, LinkKind::Pcie, 16, 0.1);
    b.link(swD, gpu[4], LinkKind::Pcie, 16, 0.1);
    b.link(swD, nic1, LinkKind::Pcie, 16, 0.1);
  }
};

TEST(PathClassNames, MatchNvidiaSmi) {
  EXPECT_STREQ(pathClassName(PathClass::Self), "X");
  EXPECT_STREQ(pathClassName(PathClass::NVL), "NVL");
  EXPECT_STREQ(pathClassName(PathClass::PIX), "PIX");
  EXPECT_STREQ(pathClassName(PathClass::PXB), "PXB");
  EXPECT_STREQ(pathClassName(PathClass::PHB), "PHB");
  EXPECT_STREQ(pathClassName(PathClass::SYS), "SYS");
  EXPECT_STREQ(pathClassName(PathClass::NET), "NET");
  EXPECT_STREQ(pathClassName(PathClass::None), "-");
}

TEST(Paths, PcieClassesAndBottlenecks) {
  TwoSocketBox box;
  const Topology& t = box.b.topology();
  ASSERT_NO_THROW(validateTopology(t));
  const PathMatrix m =
      computePaths(t, {box.gpu[0], box.gpu[1], box.gpu[2], box.gpu[3], box.gpu[4]});
  EXPECT_EQ(m.at(0, 0).cls, PathClass::Self);
  EXPECT_EQ(m.at(0, 1).cls, PathClass::PIX);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 8);  // gpu1's x8 link
  EXPECT_EQ(m.at(0, 1).links.size(), 2u);
  EXPECT_NEAR(m.at(0, 1).latency, 0.2, 1e-12);
  EXPECT_EQ(m.at(0, 2).cls, PathClass::PXB);  // swA, top, swB: no cpu
  EXPECT_DOUBLE_EQ(m.at(0, 2).bandwidth, 16);
  EXPECT_EQ(m.at(0, 2).links.size(), 4u);
  EXPECT_EQ(m.at(0, 3).cls, PathClass::NODE);  // two trees, no bridge named: two bridges
  EXPECT_EQ(m.at(0, 4).cls, PathClass::SYS);
  EXPECT_DOUBLE_EQ(m.at(0, 4).bandwidth, 16);
  EXPECT_EQ(m.at(4, 0).cls, PathClass::SYS);
  EXPECT_NEAR(m.at(0, 4).latency, 0.1 * 5 + 0.5, 1e-12);
}

TEST(Paths, SmpBottleneckAndSymmetry) {
  TwoSocketBox box;
  box.b.topology().links[2].bandwidth = 10;  // the smp link (after two host links)
  ASSERT_EQ(box.b.topology().links[2].kind, LinkKind::Smp);
  const PathMatrix m = computePaths(box.b.topology(), {box.gpu[3], box.gpu[4]});
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 10);
  EXPECT_DOUBLE_EQ(m.at(1, 0).bandwidth, 10);
  EXPECT_EQ(m.at(0, 1).links.size(), m.at(1, 0).links.size());
}

TEST(Paths, DirectNvlinkBeatsPcieAndCountsLanes) {
  TwoSocketBox box;
  box.b.link(box.gpu[0], box.gpu[4], LinkKind::NvLink, 50, 0.3, 2);
  const PathMatrix m = computePaths(box.b.topology(), {box.gpu[0], box.gpu[4]});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NVL);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 50);
  EXPECT_EQ(m.at(0, 1).links.size(), 1u);
  EXPECT_DOUBLE_EQ(m.at(0, 1).latency, 0.3);
}

// A PCIe route shares its switch uplinks and the socket link with every
// other pair; an NVLink is the pair's own: NVL wins even when nominally
// narrower (NCCL prefers NVL by class too).
TEST(Paths, NarrowNvlinkStillBeatsWiderPcie) {
  TwoSocketBox box;
  box.b.link(box.gpu[0], box.gpu[1], LinkKind::NvLink, 5, 0.3, 1);
  const PathMatrix m = computePaths(box.b.topology(), {box.gpu[0], box.gpu[1]});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NVL);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 5);
}

// The shipped file where each bridged pair has one NVLink 3 link (25 GB/s)
// and PCIe gen4 routes are nominally wider (31.5): bridged pairs are NVL,
// the others keep their PCIe class.
TEST(Paths, BridgedPcieBoxUsesItsNvlinks) {
  const Topology t = reference("pcie-4gpu-nvlink-bridges.xml");
  const std::vector<int> gpus = t.nodesOfKind(NodeKind::Gpu);
  ASSERT_EQ(gpus.size(), 4u);
  const PathMatrix m = computePaths(t, gpus);
  for (auto [a, b] : {std::pair{0, 1}, {1, 2}, {2, 3}, {3, 0}}) {
    EXPECT_EQ(m.at(a, b).cls, PathClass::NVL) << a << "-" << b;
    EXPECT_DOUBLE_EQ(m.at(a, b).bandwidth, 25) << a << "-" << b;
  }
  EXPECT_EQ(m.at(0, 2).cls, PathClass::SYS);
  EXPECT_EQ(m.at(1, 3).cls, PathClass::SYS);
}

TEST(Paths, NvlinkNeverForwardsThroughAnotherGpu) {
  TwoSocketBox box;
  box.b.link(box.gpu[0], box.gpu[2], LinkKind::NvLink, 100);
  box.b.link(box.gpu[2], box.gpu[3], LinkKind::NvLink, 100);
  const PathMatrix m = computePaths(box.b.topology(), {box.gpu[0], box.gpu[3]});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NODE);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 16);
}

TEST(Paths, TreesUnderOneHostBridgeArePhbElseNode) {
  TwoSocketBox box;
  Topology t = box.b.topology();
  const PathMatrix unnamed = computePaths(t, {box.gpu[0], box.gpu[3]});
  EXPECT_EQ(unnamed.at(0, 1).cls, PathClass::NODE);
  // Name the bridges of the trees that leave cpu0.
  std::vector<int> roots;
  for (int l = 0; l < static_cast<int>(t.links.size()); ++l) {
    const Link& link = t.links[l];
    if (link.kind == LinkKind::Pcie && (link.a == box.cpu0 || link.b == box.cpu0)) {
      roots.push_back(l);
    }
  }
  ASSERT_EQ(roots.size(), 2u);  // to top and to swC
  for (int l : roots) t.links[l].bridge = "0000:00";
  validateTopology(t);
  EXPECT_EQ(computePaths(t, {box.gpu[0], box.gpu[3]}).at(0, 1).cls, PathClass::PHB);
  t.links[roots[1]].bridge = "0000:40";
  EXPECT_EQ(computePaths(t, {box.gpu[0], box.gpu[3]}).at(0, 1).cls, PathClass::NODE);
  EXPECT_STREQ(pathClassName(PathClass::NODE), "NODE");
}

TEST(Paths, NvswitchPlanesAddUp) {
  GraphBuilder b;
  const int host = b.host("h");
  const int cpu = b.cpu(host, "h/cpu0");
  int gpu[3], plane[3];
  for (int i = 0; i < 3; ++i) {
    gpu[i] = b.node(NodeKind::Gpu, host, "h/gpu" + std::to_string(i));
    b.link(cpu, gpu[i], LinkKind::Pcie, 16);
    plane[i] = b.node(NodeKind::NvSwitch, host, "h/nvsw" + std::to_string(i));
  }
  // gpu0 and gpu1 meet on every plane (2, 3, 1 links); gpu2 only on plane 0.
  const int lanes[3] = {2, 3, 1};
  for (int p = 0; p < 3; ++p) {
    b.link(gpu[0], plane[p], LinkKind::NvLink, 25.0 * lanes[p], 0.3, lanes[p]);
    b.link(gpu[1], plane[p], LinkKind::NvLink, 25.0 * lanes[p], 0.3, lanes[p]);
  }
  b.link(gpu[2], plane[0], LinkKind::NvLink, 25, 0.3, 1);
  ASSERT_NO_THROW(validateTopology(b.topology()));
  const PathMatrix m = computePaths(b.topology(), {gpu[0], gpu[1], gpu[2]});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NVL);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 150);
  EXPECT_EQ(m.at(0, 1).links.size(), 2u);  // one route through the widest plane
  EXPECT_EQ(m.at(0, 2).cls, PathClass::NVL);
  EXPECT_DOUBLE_EQ(m.at(0, 2).bandwidth, 25);  // gpu2's single link bounds it
}

// Host a: gpu0 and a slow nic0 on one switch, a fast nic1 on another socket-0
// switch. Host b: gpu1 and nic2. Routes prefer width over hops across hosts,
// and fewer hops among equally wide routes.
struct TwoHosts {
  GraphBuilder b;
  int gpu0, gpu1, nic0, nic1, nic2, fabric;
  explicit TwoHosts(double nic0Bandwidth) {
    const int ha = b.host("a");
    const int hb = b.host("b");
    const int cpuA = b.cpu(ha, "a/cpu0");
    const int cpuB = b.cpu(hb, "b/cpu0");
    const int swA0 = b.node(NodeKind::PciSwitch, ha, "a/pci0");
    const int swA1 = b.node(NodeKind::PciSwitch, ha, "a/pci1");
    const int swB = b.node(NodeKind::PciSwitch, hb, "b/pci0");
    gpu0 = b.node(NodeKind::Gpu, ha, "a/gpu0");
    nic0 = b.node(NodeKind::Nic, ha, "a/nic0");
    nic1 = b.node(NodeKind::Nic, ha, "a/nic1");
    gpu1 = b.node(NodeKind::Gpu, hb, "b/gpu0");
    nic2 = b.node(NodeKind::Nic, hb, "b/nic0");
    fabric = b.fabric("ib");
    for (auto [up, down] : {std::pair{cpuA, swA0},
                            {cpuA, swA1},
                            {swA0, gpu0},
                            {swA0, nic0},
                            {swA1, nic1},
                            {cpuB, swB},
                            {swB, gpu1},
                            {swB, nic2}}) {
      b.link(up, down, LinkKind::Pcie, 64, 0.5);
    }
    b.link(nic0, fabric, LinkKind::Net, nic0Bandwidth, 2);
    b.link(nic1, fabric, LinkKind::Net, 50, 2);
    b.link(nic2, fabric, LinkKind::Net, 50, 2);
  }
  bool uses(const Path& p, int node) const {
    for (int l : p.links) {
      const Link& link = b.topologyConst().links[l];
      if (link.a == node || link.b == node) return true;
    }
    return false;
  }
};

TEST(Paths, AcrossHostsTheWidestNicWinsOverFewerHops) {
  TwoHosts hosts(12.5);
  ASSERT_NO_THROW(validateTopology(hosts.b.topology()));
  const PathMatrix m = computePaths(hosts.b.topology(), {hosts.gpu0, hosts.gpu1});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NET);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 50);
  EXPECT_TRUE(hosts.uses(m.at(0, 1), hosts.nic1));
  EXPECT_FALSE(hosts.uses(m.at(0, 1), hosts.nic0));
  EXPECT_EQ(m.at(0, 1).links.size(), 8u);
}

TEST(Paths, AcrossHostsEqualWidthTakesFewerHops) {
  TwoHosts hosts(50);
  const PathMatrix m = computePaths(hosts.b.topology(), {hosts.gpu0, hosts.gpu1});
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 50);
  EXPECT_TRUE(hosts.uses(m.at(0, 1), hosts.nic0));
  EXPECT_EQ(m.at(0, 1).links.size(), 6u);
  EXPECT_NEAR(m.at(0, 1).latency, 4 * 0.5 + 2 * 2, 1e-12);
}

TEST(Paths, InsideAHostRoutesNeverLeaveThroughTheNetwork) {
  // Socket 1's nic sits on the same fabric; the 100 GB/s network is wider
  // than the 10 GB/s SMP link, yet a same-host path stays SYS.
  TwoSocketBox box;
  box.b.topology().links[2].bandwidth = 10;
  const int fabric = box.b.fabric("ib");
  box.b.link(box.nic0, fabric, LinkKind::Net, 100);
  box.b.link(box.nic1, fabric, LinkKind::Net, 100);
  const PathMatrix m = computePaths(box.b.topology(), {box.gpu[3], box.gpu[4], box.nic0});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::SYS);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 10);
  EXPECT_EQ(m.at(0, 2).cls, PathClass::PIX);
  EXPECT_EQ(m.at(1, 2).cls, PathClass::SYS);
}

TEST(Paths, UnreachableIsNone) {
  TwoSocketBox box;
  box.b.topology().links.erase(box.b.topology().links.begin() + 2);  // drop the smp link
  const PathMatrix m = computePaths(box.b.topology(), {box.gpu[0], box.gpu[4]});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::None);
  EXPECT_EQ(m.at(0, 1).bandwidth, 0);
  EXPECT_TRUE(m.at(0, 1).links.empty());
}

TEST(Paths, RejectsEndpointsThatAreNoNodes) {
  TwoSocketBox box;
  EXPECT_THROW(computePaths(box.b.topology(), {0, 1000}), Error);
  EXPECT_THROW(nearestNic(box.b.topology(), -1), Error);
}

TEST(NearestNic, PrefersTheBestClassThenBandwidth) {
  TwoSocketBox box;
  const Topology& t = box.b.topology();
  EXPECT_EQ(nearestNic(t, box.gpu[3]), box.nic0);  // PIX
  EXPECT_EQ(nearestNic(t, box.gpu[0]), box.nic0);  // PHB beats SYS
  EXPECT_EQ(nearestNic(t, box.gpu[4]), box.nic1);
  GraphBuilder bare;
  const int host = bare.host("x");
  const int cpu = bare.cpu(host, "x/cpu0");
  const int gpu = bare.node(NodeKind::Gpu, host, "x/gpu0");
  bare.link(cpu, gpu, LinkKind::Pcie, 16);
  EXPECT_EQ(nearestNic(bare.topology(), gpu), -1);
}

// nvidia-smi topo -m on a DGX-1V: NV1/NV2 where the cube-mesh has one or two
// links, SYS elsewhere; each NIC is PIX to its switch's GPUs, PHB to the
// other switch of its socket, SYS across.
TEST(ReferencePaths, Dgx1HybridCubeMesh) {
  const Topology t = reference("dgx1-v100.xml");
  const PathMatrix m = computePaths(t, gpusThenNics(t));
  ASSERT_EQ(m.endpoints.size(), 12u);
  const int lanes[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0},
                           {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
                           {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                           {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      const Path& p = m.at(i, j);
      if (i == j) {
        EXPECT_EQ(p.cls, PathClass::Self);
      } else if (lanes[i][j] > 0) {
        EXPECT_EQ(p.cls, PathClass::NVL) << i << "," << j;
        EXPECT_DOUBLE_EQ(p.bandwidth, 25.0 * lanes[i][j]) << i << "," << j;
        EXPECT_EQ(p.links.size(), 1u);
      } else {
        EXPECT_EQ(p.cls, PathClass::SYS) << i << "," << j;
        EXPECT_DOUBLE_EQ(p.bandwidth, 15.76) << i << "," << j;  // PCIe gen3 x16 < QPI
      }
    }
  }
  const PathClass gpu0ToNic[4] = {PathClass::PIX, PathClass::PHB, PathClass::SYS, PathClass::SYS};
  for (int n = 0; n < 4; ++n) EXPECT_EQ(m.at(0, 8 + n).cls, gpu0ToNic[n]) << "nic" << n;
  EXPECT_EQ(m.at(8, 9).cls, PathClass::PHB);  // nic0 - nic1 stays inside the host
  for (int g = 0; g < 8; ++g)
    EXPECT_EQ(nearestNic(t, t.nodesOfKind(NodeKind::Gpu)[g]),
              t.find(fmt::format("dgx1/nic{}", g / 2)));
}

TEST(ReferencePaths, DgxH100AllPairsNvlinkAt450) {
  const Topology t = reference("dgx-h100.xml");
  const PathMatrix m = computePaths(t, gpusThenNics(t));
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      EXPECT_EQ(m.at(i, j).cls, PathClass::NVL);
      EXPECT_DOUBLE_EQ(m.at(i, j).bandwidth, 450.0) << i << "," << j;
      EXPECT_EQ(m.at(i, j).links.size(), 2u);  // gpu - nvswitch - gpu
    }
    EXPECT_EQ(m.at(i, 8 + i).cls, PathClass::PIX);
    EXPECT_NEAR(m.at(i, 8 + i).bandwidth, 63.008, 1e-9);
    // Sapphire Rapids: every switch tree has its own host bridge, and
    // nvidia-smi topo -m shows NODE between trees of one socket.
    EXPECT_EQ(m.at(i, 8 + (i ^ 1)).cls, PathClass::NODE);
    EXPECT_EQ(m.at(i, 8 + (i + 4) % 8).cls, PathClass::SYS);
    EXPECT_EQ(nearestNic(t, m.endpoints[i]), m.endpoints[8 + i]);
  }
}

TEST(ReferencePaths, PcieBoxIsPixInsideASocketAndSysAcross) {
  const Topology t = reference("pcie-4gpu-2socket.xml");
  const PathMatrix m = computePaths(t, gpusThenNics(t));
  EXPECT_EQ(m.at(0, 1).cls, PathClass::PIX);
  EXPECT_EQ(m.at(2, 3).cls, PathClass::PIX);
  EXPECT_NEAR(m.at(0, 1).bandwidth, 31.504, 1e-9);
  for (int i : {0, 1}) {
    for (int j : {2, 3}) EXPECT_EQ(m.at(i, j).cls, PathClass::SYS);
  }
  EXPECT_EQ(m.at(0, 4).cls, PathClass::PIX);
  EXPECT_EQ(m.at(3, 4).cls, PathClass::SYS);
  EXPECT_EQ(nearestNic(t, m.endpoints[3]), m.endpoints[4]);
}

TEST(ReferencePaths, CpuOnlyHostHasNoGpuPaths) {
  const Topology t = reference("cpu-2socket.xml");
  EXPECT_TRUE(computePaths(t, t.nodesOfKind(NodeKind::Gpu)).paths.empty());
}

TEST(ReferencePaths, ClusterCrossesNodesOverTheNetwork) {
  const Topology t = reference("cluster-16x-h100.xml");
  const std::vector<int> gpus = t.nodesOfKind(NodeKind::Gpu);
  ASSERT_EQ(gpus.size(), 128u);
  const PathMatrix m = computePaths(t, gpus);
  for (int j = 1; j < 128; ++j) {
    const Path& p = m.at(0, j);
    if (j < 8) {
      EXPECT_EQ(p.cls, PathClass::NVL);
      EXPECT_DOUBLE_EQ(p.bandwidth, 450.0);
    } else {
      EXPECT_EQ(p.cls, PathClass::NET) << j;
      EXPECT_DOUBLE_EQ(p.bandwidth, 50.0) << j;
    }
  }
  // GPU k of one node reaches GPU k of another through NIC k on both sides.
  const Path& p = m.at(3, 8 * 5 + 3);
  ASSERT_EQ(p.links.size(), 6u);
  EXPECT_EQ(t.nodes[t.links[p.links[1]].b].id, "node00/nic3");
  EXPECT_EQ(t.nodes[t.links[p.links[4]].b].id, "node05/nic3");
  EXPECT_NEAR(p.latency, 4 * 0.5 + 2 * 2.0, 1e-12);
}

}  // namespace
}  // namespace loom::topo
