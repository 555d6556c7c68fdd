// Ring search: Hamiltonian rings, optimal bottleneck (brute force on <= 8
// ranks), channels within link capacity, NVLink-only rings on the DGX-1 cube
// mesh, one crossing per host per ring with the exit rank's NIC.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "core/error.h"
#include "graph_builder.h"
#include "search_fixtures.h"
#include "topology/ring_search.h"

namespace loom::topo {
namespace {

using testing::dgx1CubeMesh;
using testing::randomHost;
using testing::referenceFile;
using testing::smallCluster;

void expectHamiltonian(const Ring& ring, int n) {
  std::vector<int> sorted = ring.order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
}

// The best bottleneck over every ring (rotations fixed: rank 0 first).
double bruteForceBottleneck(const RankGraph& g) {
  std::vector<int> order(g.size());
  std::iota(order.begin(), order.end(), 0);
  double best = 0;
  do {
    best = std::max(best, ringBottleneck(g, order));
  } while (std::next_permutation(order.begin() + 1, order.end()));
  return best;
}

// Ring hops per arc over all rings; rings after the first must fit capacity.
void expectWithinCapacity(const RankGraph& g, const std::vector<Ring>& rings) {
  std::map<int, int> load;
  for (size_t k = 0; k < rings.size(); ++k) {
    const auto& o = rings[k].order;
    for (size_t p = 0; p < o.size(); ++p) {
      const Hop& hop = g.hop(o[p], o[(p + 1) % o.size()]);
      for (int arc : hop.arcs) {
        ++load[arc];
        if (k > 0) {
          EXPECT_LE(load[arc], g.arcCapacity(arc, hop.channelBandwidth))
              << "ring " << k << " arc " << arc;
        }
      }
    }
  }
}

TEST(RingSearch, CubeMeshRingsUseNvlinkOnly) {
  const Topology t = dgx1CubeMesh();
  const RankGraph g(t, defaultRankNodes(t));
  const auto rings = searchRings(g);
  ASSERT_GE(rings.size(), 2u);
  for (const Ring& ring : rings) {
    expectHamiltonian(ring, 8);
    EXPECT_EQ(ring.worst, PathClass::NVL);
  }
  EXPECT_DOUBLE_EQ(ringBottleneck(g, rings[0].order), bruteForceBottleneck(g));
  expectWithinCapacity(g, rings);
}

TEST(RingSearch, MatchesBruteForceOnRandomHosts) {
  for (unsigned seed = 1; seed <= 12; ++seed) {
    const int n = 4 + static_cast<int>(seed % 5);  // 4..8 GPUs
    const Topology t = randomHost(n, seed);
    const RankGraph g(t, defaultRankNodes(t));
    const auto rings = searchRings(g);
    ASSERT_FALSE(rings.empty());
    for (const Ring& ring : rings) expectHamiltonian(ring, n);
    EXPECT_DOUBLE_EQ(ringBottleneck(g, rings[0].order), bruteForceBottleneck(g)) << "seed " << seed;
    expectWithinCapacity(g, rings);
  }
}

TEST(RingSearch, HeuristicFindsTheNvlinkRingBeyondExactLimit) {
  // 12 GPUs on one PCIe switch with an NVLink ring 0-1-...-11-0 hidden in it.
  testing::GraphBuilder b;
  const int host = b.host("h");
  const int cpu = b.cpu(host, "cpu");
  const int sw = b.node(NodeKind::PciSwitch, host, "sw");
  b.link(cpu, sw, LinkKind::Pcie, 16, 0.5, 16);
  std::vector<int> gpus;
  for (int i = 0; i < 12; ++i) {
    gpus.push_back(b.node(NodeKind::Gpu, host, "gpu" + std::to_string(i)));
    b.link(sw, gpus.back(), LinkKind::Pcie, 16, 0.5, 16);
  }
  const int shuffle[12] = {0, 7, 3, 10, 5, 1, 8, 11, 2, 6, 9, 4};
  for (int i = 0; i < 12; ++i) {
    b.link(gpus[shuffle[i]], gpus[shuffle[(i + 1) % 12]], LinkKind::NvLink, 25, 0.3);
  }
  const Topology t = b.take();
  const RankGraph g(t, defaultRankNodes(t));
  const auto rings = searchRings(g);
  expectHamiltonian(rings[0], 12);
  EXPECT_DOUBLE_EQ(ringBottleneck(g, rings[0].order), 25.0);
  EXPECT_EQ(rings[0].worst, PathClass::NVL);
}

TEST(RingSearch, MultiHostRingsCrossEachHostOnceThroughTheExitNic) {
  const Topology t = smallCluster(3, 4);
  const RankGraph g(t, defaultRankNodes(t));
  const auto rings = searchRings(g);
  ASSERT_GE(rings.size(), 2u);  // two NICs per host: two crossings each way
  for (const Ring& ring : rings) {
    expectHamiltonian(ring, 12);
    int crossings = 0;
    for (size_t p = 0; p < ring.order.size(); ++p) {
      const int a = ring.order[p];
      const int b = ring.order[(p + 1) % ring.order.size()];
      if (g.hostOf(a) == g.hostOf(b)) continue;
      ++crossings;
      EXPECT_EQ(g.hop(a, b).arcs, [&] {
        std::vector<int> arcs = g.exitLeg(a).arcs;
        arcs.insert(arcs.end(), g.entryLeg(b).arcs.begin(), g.entryLeg(b).arcs.end());
        return arcs;
      }());
      EXPECT_EQ(g.nicOf(a), nearestNic(t, g.nodeOf(a)));
    }
    EXPECT_EQ(crossings, 3);
  }
  expectWithinCapacity(g, rings);
}

TEST(RingSearch, RejectsRanksOffDevices) {
  const Topology t = smallCluster(1, 2);
  EXPECT_THROW(RankGraph(t, {t.find("h0/nic0")}), Error);
  EXPECT_THROW(RankGraph(t, {12345}), Error);
  const RankGraph g(t, defaultRankNodes(t));
  EXPECT_THROW(searchRings(g, {.maxRings = 0}), Error);
}

// `n` GPUs on PCIe, every pair also joined by one NVLink: one ring hop per
// direction per link.
Topology fullMesh(int n) {
  testing::GraphBuilder b;
  const int host = b.host("mesh");
  const int cpu = b.cpu(host, "cpu0");
  std::vector<int> gpus;
  for (int g = 0; g < n; ++g) {
    gpus.push_back(b.node(NodeKind::Gpu, host, "gpu" + std::to_string(g)));
    b.link(cpu, gpus.back(), LinkKind::Pcie, 16.0, 0.5, 16);
  }
  for (int a = 0; a < n; ++a) {
    for (int c = a + 1; c < n; ++c) b.link(gpus[a], gpus[c], LinkKind::NvLink, 25.0, 0.3, 1);
  }
  return b.take();
}

// Each GPU of an n-mesh has n - 1 links out, so at most n - 1 link-disjoint
// rings; the complete symmetric digraph splits into n - 1 Hamiltonian cycles
// for every n except 4 and 6 (Tillson, "A Hamiltonian decomposition of
// K*_2m, 2m >= 8", J. Combin. Theory B 29, 1980), where n - 2 is the most.
// Ring after ring strands links: 6 of the 7 on eight GPUs.
TEST(RingSearch, FullMeshCarriesOneRingPerLinkOutOfEachGpu) {
  for (int n = 3; n <= 9; ++n) {
    const Topology t = fullMesh(n);
    const RankGraph g(t, defaultRankNodes(t));
    const auto rings = searchRings(g);
    const size_t expected = (n == 4 || n == 6) ? n - 2 : n - 1;
    EXPECT_EQ(rings.size(), expected) << n << " GPUs";
    for (const Ring& ring : rings) {
      expectHamiltonian(ring, n);
      EXPECT_EQ(ring.worst, PathClass::NVL) << n << " GPUs";
      EXPECT_DOUBLE_EQ(ring.bandwidth, 25.0) << n << " GPUs: rings share a link";
    }
    // Every ring within capacity, the first included.
    std::map<int, int> load;
    for (const Ring& ring : rings) {
      for (size_t p = 0; p < ring.order.size(); ++p) {
        for (int arc : g.hop(ring.order[p], ring.order[(p + 1) % ring.order.size()]).arcs) {
          EXPECT_LE(++load[arc], 1) << n << " GPUs, arc " << arc;
        }
      }
    }
  }
}

// One channel of Loom's kernel path moves about 9.35 GB/s (one thread block;
// tuner::kKernelChannelGBps) whatever the link. Each link then holds as many
// channels as fit at that speed, and the search adds rings while their total
// grows: on an NVSwitch box (8-GPU H100, 16-GPU DGX-2) up to its limit of 16
// (450 GB/s would take 48), on a PCIe gen4 x16 route three (31.5 / 9.35).
// Without the cap the same machines get one ring each, at the links' own
// speed.
TEST(RingSearch, ChannelCapAddsRingsUpToWhatTheLinksHold) {
  HopOptions capped;
  capped.channelBandwidth = 9.35;
  // The 16-GPU DGX-2 (two baseboards of NVSwitches) as the 8-GPU H100 box.
  const std::vector<std::pair<const char*, double>> switched = {{"dgx-h100.xml", 450.0},
                                                                {"dgx2-v100.xml", 150.0}};
  for (const auto& [file, links] : switched) {
    const Topology t = loadTopologyFile(referenceFile(file));
    const auto free = searchRings(RankGraph(t, defaultRankNodes(t)));
    ASSERT_EQ(free.size(), 1u) << file;
    EXPECT_DOUBLE_EQ(free[0].bandwidth, links) << file;
    const RankGraph g(t, defaultRankNodes(t), capped);
    const auto rings = searchRings(g);
    EXPECT_EQ(rings.size(), 16u) << file;
    for (const Ring& r : rings) EXPECT_DOUBLE_EQ(r.bandwidth, 9.35);
    expectWithinCapacity(g, rings);
  }
  {
    const Topology t = loadTopologyFile(referenceFile("pcie-4gpu-2socket.xml"));
    EXPECT_EQ(searchRings(RankGraph(t, defaultRankNodes(t))).size(), 1u);
    const RankGraph g(t, defaultRankNodes(t), capped);
    const auto rings = searchRings(g);
    EXPECT_EQ(rings.size(), 3u);
    for (const Ring& r : rings) EXPECT_DOUBLE_EQ(r.bandwidth, 9.35);
    expectWithinCapacity(g, rings);
    // The socket link's arc: 62.4 GB/s holds six channels, an x16 link three.
    for (int arc = 0; arc < 2 * static_cast<int>(t.links.size()); ++arc) {
      const Link& link = t.links[arc / 2];
      if (link.kind == LinkKind::Smp) {
        EXPECT_EQ(g.arcCapacity(arc, 9.35), 6);
      }
      if (link.kind == LinkKind::Pcie) {
        EXPECT_EQ(g.arcCapacity(arc, 9.35), 3);
        EXPECT_EQ(g.arcCapacity(arc), 1);
      }
    }
  }
  HopOptions bad;
  bad.channelBandwidth = -1;
  const Topology t = smallCluster(1, 2);
  EXPECT_THROW(RankGraph(t, defaultRankNodes(t), bad), Error);
}

TEST(RingSearch, LoneRankHasATrivialRing) {
  const Topology t = smallCluster(1, 2);
  const RankGraph g(t, {defaultRankNodes(t)[0]});
  const auto rings = searchRings(g);
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_EQ(rings[0].order, std::vector<int>{0});
}

// --- reference systems ------------------------------------------------------

struct Reference {
  const char* file;
  size_t minRings;
  PathClass worst;
};

class ReferenceRings : public ::testing::TestWithParam<Reference> {};

TEST_P(ReferenceRings, AreValidAndOptimal) {
  const std::string path = referenceFile(GetParam().file);
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing";
  const Topology t = loadTopologyFile(path);
  const RankGraph g(t, defaultRankNodes(t, t.nodesOfKind(NodeKind::Gpu).empty() ? 4 : 0));
  const auto rings = searchRings(g);
  ASSERT_GE(rings.size(), GetParam().minRings);
  for (const Ring& ring : rings) {
    expectHamiltonian(ring, g.size());
    EXPECT_LE(ring.worst, GetParam().worst);
  }
  expectWithinCapacity(g, rings);
  if (g.size() <= 8) {
    EXPECT_DOUBLE_EQ(ringBottleneck(g, rings[0].order), bruteForceBottleneck(g));
  }
  std::cout << GetParam().file << ": " << rings.size() << " ring(s), first bottleneck "
            << ringBottleneck(g, rings[0].order) << " GB/s, worst " << pathClassName(rings[0].worst)
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(Files, ReferenceRings,
                         ::testing::Values(Reference{"dgx1-v100.xml", 2, PathClass::NVL},
                                           Reference{"dgx-h100.xml", 1, PathClass::NVL},
                                           Reference{"dgx2-v100.xml", 1, PathClass::NVL},
                                           Reference{"pcie-4gpu-2socket.xml", 1, PathClass::SYS},
                                           // NVLink-only rings, though the
                                           // PCIe hops are nominally wider.
                                           Reference{"pcie-4gpu-nvlink-bridges.xml", 2,
                                                     PathClass::NVL},
                                           Reference{"cpu-2socket.xml", 1, PathClass::SYS},
                                           Reference{"cluster-16x-h100.xml", 8, PathClass::NET}));

}  // namespace
}  // namespace loom::topo
