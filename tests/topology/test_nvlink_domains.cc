// NVLink domains that span hosts (a GB200 NVL72 rack: 18 compute trays on 9
// shared NVLink switch trays): the schema's hostless nvswitches and
// nvlink-c2c links, NVLink paths between trays, one rack as one island for
// rings, trees and the tuner, and the network only between racks.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.h"
#include "search_fixtures.h"
#include "topology/paths.h"
#include "topology/ring_search.h"
#include "topology/topo_file.h"
#include "topology/tree_search.h"
#include "tuner/tree_shape.h"
#include "tuner/tuner.h"

namespace loom::topo {
namespace {

// Two one-GPU hosts; `joins` links their GPUs.
std::string twoHosts(const std::string& joins) {
  std::string xml = "<loom_topology version=\"1\" source=\"unit test\">\n";
  for (const char* h : {"a", "b"}) {
    const std::string id = h;
    xml += "<host id=\"" + id + "\"/>\n<cpu id=\"" + id + "/cpu0\" host=\"" + id +
           "\" numa=\"0\" cores=\"8\"/>\n<link a=\"" + id + "/cpu0\" b=\"" + id +
           "\" kind=\"host\" bandwidth=\"0\"/>\n<gpu id=\"" + id + "/gpu0\" host=\"" + id +
           "\"/>\n<link a=\"" + id + "/cpu0\" b=\"" + id +
           "/gpu0\" kind=\"nvlink-c2c\" bandwidth=\"450\"/>\n";
  }
  return xml + joins + "</loom_topology>\n";
}

std::string messageOf(const std::string& xml) {
  try {
    parseTopologyXml(xml, "t.xml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NvlinkDomain, HostsMeetOverNvlinkOnlyThroughASharedSwitch) {
  EXPECT_NE(messageOf(twoHosts("<link a=\"a/gpu0\" b=\"b/gpu0\" kind=\"nvlink\" "
                               "bandwidth=\"50\"/>\n"))
                .find("an nvlink between two hosts goes through a shared nvswitch"),
            std::string::npos);
  const std::string shared =
      "<nvswitch id=\"sw\"/>\n"
      "<link a=\"a/gpu0\" b=\"sw\" kind=\"nvlink\" bandwidth=\"100\" lanes=\"2\"/>\n"
      "<link a=\"b/gpu0\" b=\"sw\" kind=\"nvlink\" bandwidth=\"100\" lanes=\"2\"/>\n";
  const Topology t = parseTopologyXml(twoHosts(shared), "t.xml");
  EXPECT_EQ(t.nodes[t.find("sw")].host, -1);
  const std::vector<int> island = nvlinkIslands(t);
  EXPECT_EQ(island[t.find("a/gpu0")], island[t.find("b/gpu0")]);
  EXPECT_EQ(island[t.find("sw")], -1);
  const PathMatrix m = computePaths(t, {t.find("a/gpu0"), t.find("b/gpu0")});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NVL);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 100.0);
  // Saved and loaded again, the hostless switch and the c2c links survive.
  EXPECT_TRUE(sameTopology(t, parseTopologyXml(saveTopologyXml(t), "again.xml")));
  // Without the switch the hosts are two islands.
  const Topology apart = parseTopologyXml(twoHosts(""), "t.xml");
  EXPECT_NE(nvlinkIslands(apart)[apart.find("a/gpu0")], nvlinkIslands(apart)[apart.find("b/gpu0")]);
}

TEST(NvlinkDomain, C2cJoinsACpuAndAGpuOfOneHost) {
  const std::string nic =
      "<nic id=\"a/nic0\" host=\"a\"/>\n"
      "<link a=\"a/cpu0\" b=\"a/nic0\" kind=\"pcie\" bandwidth=\"63\"/>\n";
  EXPECT_NE(messageOf(twoHosts(nic + "<link a=\"a/gpu0\" b=\"a/nic0\" kind=\"nvlink-c2c\" "
                                     "bandwidth=\"450\"/>\n"))
                .find("an nvlink-c2c joins a cpu and a gpu"),
            std::string::npos);
  EXPECT_NE(messageOf(twoHosts("<link a=\"a/cpu0\" b=\"b/gpu0\" kind=\"nvlink-c2c\" "
                               "bandwidth=\"450\"/>\n"))
                .find("an nvlink-c2c stays inside one host"),
            std::string::npos);
  // A GPU hangs off its CPU once: by C2C or by PCIe.
  EXPECT_NE(messageOf(twoHosts("<link a=\"a/cpu0\" b=\"a/gpu0\" kind=\"pcie\" "
                               "bandwidth=\"32\"/>\n"))
                .find("'a/gpu0' already has a nvlink-c2c link"),
            std::string::npos);
  // GPU to its CPU's NIC: through one CPU on its own C2C, one host bridge.
  const Topology t = parseTopologyXml(twoHosts(nic), "t.xml");
  const PathMatrix m = computePaths(t, {t.find("a/gpu0"), t.find("a/nic0")});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::PHB);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 63.0);
  EXPECT_EQ(nearestNic(t, t.find("a/gpu0")), t.find("a/nic0"));
}

// NVLink 5: 18 links of 50 GB/s per direction, two into each of 9 switch
// trays: 900 GB/s between any two GPUs of the rack, whichever trays.
TEST(NvlinkDomain, RackGpusTalkOverNvlinkAcrossTrays) {
  const Topology t = loadTopologyFile(testing::referenceFile("gb200-nvl72.xml"));
  ASSERT_EQ(t.nodesOfKind(NodeKind::Gpu).size(), 72u);
  const int first = t.find("rack0/tray00/gpu0");
  const int last = t.find("rack0/tray17/gpu3");
  const PathMatrix m = computePaths(t, {first, last, t.find("rack0/tray00/nic0")});
  EXPECT_EQ(m.at(0, 1).cls, PathClass::NVL);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidth, 900.0);
  EXPECT_EQ(m.at(0, 1).links.size(), 2u);  // up to a switch tray, down to the GPU
  EXPECT_EQ(m.at(0, 2).cls, PathClass::PHB);
  // Two NICs per Grace, equally near both of its GPUs: dealt out in turn.
  for (int g = 0; g < 4; ++g) {
    const std::string tray = "rack0/tray05/";
    EXPECT_EQ(nearestNic(t, t.find(tray + "gpu" + std::to_string(g))),
              t.find(tray + "nic" + std::to_string(g)));
  }
}

TEST(NvlinkDomain, ARackIsOneIslandWithoutNetworkHops) {
  const Topology t = loadTopologyFile(testing::referenceFile("gb200-nvl72.xml"));
  const RankGraph g(t, defaultRankNodes(t));
  EXPECT_EQ(g.hostCount(), 1);
  for (int b = 1; b < g.size(); ++b) EXPECT_EQ(g.hop(0, b).cls, PathClass::NVL) << b;
  const auto rings = searchRings(g);
  for (const Ring& ring : rings) EXPECT_EQ(ring.worst, PathClass::NVL);
  const TreeSet trees = searchTrees(g, rings.front().order, tuner::doubleBinaryTreeShape());
  EXPECT_EQ(trees.chains[0].size(), 1u);  // one chain through all 72
  const tuner::TunerTopology tt = tuner::describeTopology(g, rings);
  EXPECT_TRUE(tt.oneHost());
  EXPECT_TRUE(tuner::modelled(tt, Collective::AllReduce, Algorithm::Direct));
}

// Two racks on one fabric: two islands. Every ring enters and leaves each
// rack once (two network hops), every other hop is NVLink; the tuner sees
// two hosts of 72 and offers the hierarchical all-reduce over them.
TEST(NvlinkDomain, TwoRacksMeetOnlyOverTheNetwork) {
  const Topology t = loadTopologyFile(testing::referenceFile("gb200-nvl72-2rack.xml"));
  const RankGraph g(t, defaultRankNodes(t));
  ASSERT_EQ(g.size(), 144);
  EXPECT_EQ(g.hostCount(), 2);
  EXPECT_EQ(g.ranksOn(0).size(), 72u);
  EXPECT_EQ(g.hop(0, 71).cls, PathClass::NVL);
  EXPECT_EQ(g.hop(0, 72).cls, PathClass::NET);
  const auto rings = searchRings(g, {.maxRings = 2});
  ASSERT_EQ(rings.size(), 2u);
  std::set<int> exitNics;
  for (const Ring& ring : rings) {
    int net = 0;
    for (size_t p = 0; p < ring.order.size(); ++p) {
      const int a = ring.order[p];
      const int b = ring.order[(p + 1) % ring.order.size()];
      const PathClass cls = g.hop(a, b).cls;
      EXPECT_TRUE(cls == PathClass::NVL || cls == PathClass::NET);
      if (cls == PathClass::NET) {
        ++net;
        exitNics.insert(g.nicOf(a));
      }
    }
    EXPECT_EQ(net, 2);
  }
  EXPECT_EQ(exitNics.size(), 4u);  // each ring leaves each rack through a NIC of its own
  const tuner::TunerTopology tt = tuner::describeTopology(g, rings);
  EXPECT_EQ(tt.hosts, 2);
  ASSERT_TRUE(tt.hierarchy.has_value());
  EXPECT_EQ(tt.hierarchy->hosts.size(), 2u);
  EXPECT_FALSE(tuner::modelled(tt, Collective::AllReduce, Algorithm::Direct));
}

}  // namespace
}  // namespace loom::topo
