#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "graph_builder.h"
#include "topology/graph.h"

namespace loom::topo {
namespace {

using testing::GraphBuilder;

// One host, one socket, a switch with a GPU and a NIC: the smallest valid box.
struct SmallBox {
  GraphBuilder b;
  int host, cpu, sw, gpu, nic;
  SmallBox() {
    host = b.host("h");
    cpu = b.cpu(host, "h/cpu0");
    sw = b.node(NodeKind::PciSwitch, host, "h/pci0");
    gpu = b.node(NodeKind::Gpu, host, "h/gpu0");
    nic = b.node(NodeKind::Nic, host, "h/nic0");
    b.link(cpu, sw, LinkKind::Pcie, 16);
    b.link(sw, gpu, LinkKind::Pcie, 16);
    b.link(sw, nic, LinkKind::Pcie, 16);
  }
};

std::string problemOf(const Topology& t) {
  const auto problem = findTopologyProblem(t);
  return problem ? problem->message : "";
}

TEST(TopologyNames, KindNamesRoundTrip) {
  for (auto kind : {NodeKind::Host, NodeKind::Cpu, NodeKind::PciSwitch, NodeKind::Gpu,
                    NodeKind::Nic, NodeKind::NvSwitch, NodeKind::Fabric}) {
    EXPECT_EQ(nodeKindFromName(nodeKindName(kind)), kind);
  }
  for (auto kind :
       {LinkKind::Host, LinkKind::Smp, LinkKind::Pcie, LinkKind::NvLink, LinkKind::Net}) {
    EXPECT_EQ(linkKindFromName(linkKindName(kind)), kind);
  }
  EXPECT_STREQ(nodeKindName(NodeKind::PciSwitch), "pci");
  EXPECT_STREQ(linkKindName(LinkKind::NvLink), "nvlink");
  EXPECT_FALSE(nodeKindFromName("GPU"));
  EXPECT_FALSE(linkKindFromName("infiniband"));
}

TEST(TopologyGraph, FindKindsAndLinks) {
  SmallBox box;
  const Topology& t = box.b.topology();
  EXPECT_EQ(t.find("h/gpu0"), box.gpu);
  EXPECT_EQ(t.find("h/gpu9"), -1);
  EXPECT_EQ(t.nodesOfKind(NodeKind::Gpu), std::vector<int>{box.gpu});
  EXPECT_EQ(t.nodesOfKind(NodeKind::NvSwitch), std::vector<int>{});
  EXPECT_EQ(t.linksOf(box.sw).size(), 3u);
  const Link& up = t.links[t.linksOf(box.gpu).front()];
  EXPECT_EQ(t.other(up, box.gpu), box.sw);
  EXPECT_EQ(t.other(up, box.sw), box.gpu);
}

TEST(TopologyValidate, AcceptsAValidBox) {
  SmallBox box;
  EXPECT_NO_THROW(validateTopology(box.b.topology()));
  EXPECT_FALSE(findTopologyProblem(box.b.topology()));
}

TEST(TopologyValidate, RejectsDuplicateIds) {
  SmallBox box;
  const int dup = box.b.node(NodeKind::Gpu, box.host, "h/gpu0");
  box.b.link(box.sw, dup, LinkKind::Pcie, 16);
  const auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->node, dup);
  EXPECT_NE(problem->message.find("duplicate id"), std::string::npos) << problem->message;
  try {
    validateTopology(box.b.topology());
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'h/gpu0'"), std::string::npos) << e.what();
  }
}

TEST(TopologyValidate, RejectsBadHostIndex) {
  SmallBox box;
  box.b.topology().nodes[box.gpu].host = box.cpu;  // a cpu is not a host
  EXPECT_NE(problemOf(box.b.topology()).find("host 1 is not the index of a host"),
            std::string::npos)
      << problemOf(box.b.topology());
  box.b.topology().nodes[box.gpu].host = box.host;
  box.b.topology().nodes[box.host].host = 0;
  EXPECT_NE(problemOf(box.b.topology()).find("belongs to no host"), std::string::npos);
}

TEST(TopologyValidate, RejectsBadLinkValues) {
  struct Case {
    const char* why;
    void (*mutate)(Link&);
    const char* expected;
  };
  const Case cases[] = {
      {"zero bandwidth", [](Link& l) { l.bandwidth = 0; }, "bandwidth 0 GB/s is not positive"},
      {"negative bandwidth", [](Link& l) { l.bandwidth = -3; }, "bandwidth -3 GB/s"},
      {"nan bandwidth", [](Link& l) { l.bandwidth = std::nan(""); }, "not positive and finite"},
      {"negative latency", [](Link& l) { l.latency = -1; }, "latency -1 us"},
      {"no lanes", [](Link& l) { l.lanes = 0; }, "lanes 0 is below 1"},
      {"self link", [](Link& l) { l.b = l.a; }, "joins a node to itself"},
      {"dangling end", [](Link& l) { l.b = 99; }, "or 99 is not a node index"},
  };
  for (const Case& c : cases) {
    SmallBox box;
    c.mutate(box.b.topology().links.back());
    const auto problem = findTopologyProblem(box.b.topology());
    ASSERT_TRUE(problem) << c.why;
    EXPECT_EQ(problem->link, static_cast<int>(box.b.topology().links.size()) - 1) << c.why;
    EXPECT_NE(problem->message.find(c.expected), std::string::npos)
        << c.why << ": " << problem->message;
  }
}

TEST(TopologyValidate, RejectsLinksBetweenWrongKinds) {
  SmallBox box;
  const int l = box.b.link(box.gpu, box.cpu, LinkKind::NvLink, 25);
  const auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->link, l);
  EXPECT_NE(problem->message.find("h/gpu0 - h/cpu0, nvlink"), std::string::npos)
      << problem->message;
  EXPECT_NE(problem->message.find("joins gpus and nvswitches"), std::string::npos);
}

TEST(TopologyValidate, HostBridgeOnlyOnAPcieLinkAtACpu) {
  SmallBox box;
  Topology t = box.b.topology();
  auto linkBetween = [&](int a, int b) -> Link& {
    for (Link& l : t.links) {
      if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return l;
    }
    throw Error(ErrorCode::InternalError, "no such link");
  };
  linkBetween(box.cpu, box.sw).bridge = "0000:16";  // a tree's root
  EXPECT_EQ(problemOf(t), "");
  linkBetween(box.sw, box.gpu).bridge = "0000:16";
  EXPECT_NE(problemOf(t).find("only a pcie link at a cpu names a host bridge"), std::string::npos)
      << problemOf(t);
}

TEST(TopologyValidate, RejectsADuplicateLink) {
  SmallBox box;
  const int gpu1 = box.b.node(NodeKind::Gpu, box.host, "h/gpu1");
  box.b.link(box.sw, gpu1, LinkKind::Pcie, 16);
  box.b.link(box.gpu, gpu1, LinkKind::NvLink, 25);
  const int twin = box.b.link(gpu1, box.gpu, LinkKind::NvLink, 25);
  const auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->link, twin);
  EXPECT_NE(problem->message.find("use lanes"), std::string::npos);
}

TEST(TopologyValidate, RejectsAPcieCycle) {
  SmallBox box;
  const int sw2 = box.b.node(NodeKind::PciSwitch, box.host, "h/pci1");
  box.b.link(box.sw, sw2, LinkKind::Pcie, 16);
  const int closing = box.b.link(sw2, box.cpu, LinkKind::Pcie, 16);
  const auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->link, closing);
  EXPECT_NE(problem->message.find("cycle in the pcie tree"), std::string::npos) << problem->message;
}

TEST(TopologyValidate, RejectsPcieJoiningTwoSockets) {
  SmallBox box;
  const int cpu1 = box.b.cpu(box.host, "h/cpu1", 1);
  const int bridge = box.b.link(box.sw, cpu1, LinkKind::Pcie, 16);
  const auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->link, bridge);
  EXPECT_NE(problem->message.find("joins the pcie trees of 'h/cpu0' and 'h/cpu1'"),
            std::string::npos)
      << problem->message;
}

TEST(TopologyValidate, RejectsAGpuOutsideThePcieTree) {
  SmallBox box;
  const int orphan = box.b.node(NodeKind::Gpu, box.host, "h/gpu7");
  const auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->node, orphan);
  EXPECT_NE(problem->message.find("not under any cpu"), std::string::npos);
}

TEST(TopologyValidate, RejectsAGpuWithTwoPcieParents) {
  SmallBox box;
  const int sw2 = box.b.node(NodeKind::PciSwitch, box.host, "h/pci1");
  box.b.link(box.cpu, sw2, LinkKind::Pcie, 16);
  box.b.link(sw2, box.gpu, LinkKind::Pcie, 16);
  EXPECT_NE(problemOf(box.b.topology()).find("a gpu is a leaf"), std::string::npos)
      << problemOf(box.b.topology());
}

TEST(TopologyValidate, RejectsACpuWithoutHostLink) {
  SmallBox box;
  box.b.topology().links.erase(box.b.topology().links.begin());  // the cpu's host link
  EXPECT_NE(problemOf(box.b.topology()).find("node 'h/cpu0': no host link"), std::string::npos)
      << problemOf(box.b.topology());
}

TEST(TopologyValidate, RejectsRanksTwiceOrOffGpus) {
  SmallBox box;
  const int gpu1 = box.b.node(NodeKind::Gpu, box.host, "h/gpu1");
  box.b.link(box.sw, gpu1, LinkKind::Pcie, 16);
  box.b.topology().nodes[box.gpu].rank = 3;
  box.b.topology().nodes[gpu1].rank = 3;
  EXPECT_NE(problemOf(box.b.topology()).find("rank 3 is also on 'h/gpu0'"), std::string::npos);
  box.b.topology().nodes[gpu1].rank = -1;
  box.b.topology().nodes[box.nic].rank = 0;
  EXPECT_NE(problemOf(box.b.topology()).find("only a gpu carries a rank"), std::string::npos);
}

TEST(TopologyValidate, RejectsNetworkInsideAHostOrPcieAcrossHosts) {
  SmallBox box;
  const int other = box.b.host("g");
  const int cpuG = box.b.cpu(other, "g/cpu0");
  const int across = box.b.link(box.sw, cpuG, LinkKind::Pcie, 16);
  auto problem = findTopologyProblem(box.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->link, across);
  EXPECT_NE(problem->message.find("stays inside one host"), std::string::npos);

  SmallBox box2;
  const int gpuNet = box2.b.link(box2.gpu, box2.nic, LinkKind::Net, 12.5);
  problem = findTopologyProblem(box2.b.topology());
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->link, gpuNet);
  EXPECT_NE(problem->message.find("nic to a fabric"), std::string::npos);
}

TEST(TopologyBandwidth, TypicalValues) {
  EXPECT_NEAR(pcieBandwidth(3, 16), 15.76, 0.01);
  EXPECT_NEAR(pcieBandwidth(4, 16), 31.50, 0.01);
  EXPECT_NEAR(pcieBandwidth(5, 16), 63.01, 0.01);
  EXPECT_NEAR(pcieBandwidth(2, 8), 4.0, 1e-9);
  EXPECT_DOUBLE_EQ(nvlinkBandwidth(2, 2), 50.0);    // V100 pair with two links
  EXPECT_DOUBLE_EQ(nvlinkBandwidth(4, 18), 450.0);  // one H100's NVLink total
  EXPECT_DOUBLE_EQ(nvlinkBandwidth(1, 4), 80.0);
  EXPECT_DOUBLE_EQ(netBandwidthFromGbps(400), 50.0);
  EXPECT_DOUBLE_EQ(netBandwidthFromGbps(100), 12.5);
  EXPECT_THROW(pcieBandwidth(0, 16), Error);
  EXPECT_THROW(pcieBandwidth(7, 16), Error);
  EXPECT_THROW(pcieBandwidth(3, 0), Error);
  EXPECT_THROW(nvlinkBandwidth(6, 1), Error);
  EXPECT_THROW(netBandwidthFromGbps(0), Error);
  EXPECT_THROW(netBandwidthFromGbps(std::numeric_limits<double>::infinity()), Error);
  EXPECT_GT(typicalSmpBandwidth(), 0);
  EXPECT_EQ(typicalLatency(LinkKind::Host), 0.0);
  EXPECT_GT(typicalLatency(LinkKind::Net), typicalLatency(LinkKind::NvLink));
}

}  // namespace
}  // namespace loom::topo
