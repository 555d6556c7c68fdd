// Tuner: its pick must be the timed simulator's fastest candidate on every
// reference topology for 8 B .. 4 GiB; overrides are honoured.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "search_fixtures.h"
#include "tools/simulate/plan_timing.h"
#include "tuner/tuner.h"

namespace loom::tuner {
namespace {

Request sized(Collective collective, size_t bytes) {
  Request r;
  r.collective = collective;
  r.bytes = bytes;
  return r;
}

// Chunks grow with huge messages so a simulation stays at a few thousand
// slices per rank (the model and the simulation both use the chunk chosen).
size_t chunkLimitFor(size_t bytes) { return std::max<size_t>(size_t{256} << 10, bytes / 64); }

struct Agreement {
  int checked = 0;
  int agreed = 0;
  double worstModelError = 0;  // |model - sim| / sim over every candidate
};

Agreement compare(const TunerTopology& t, const std::string& name, bool verbose) {
  Agreement a;
  std::vector<size_t> sizes;
  for (size_t bytes = 8; bytes < (size_t{4} << 30); bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(size_t{4} << 30);
  for (size_t bytes : sizes) {
    Request req;
    req.bytes = bytes;
    req.maxChunkBytes = chunkLimitFor(bytes);
    const Choice pick = choose(t, req);
    double fastest = INFINITY;
    Candidate simBest;
    std::string line;
    for (const Choice& c : modelledCandidates(t, req)) {
      const double sim = simulateCandidate(t, req.collective, bytes, c.candidate).microseconds;
      a.worstModelError = std::max(a.worstModelError, std::abs(c.microseconds - sim) / sim);
      if (sim < fastest) {
        fastest = sim;
        simBest = c.candidate;
      }
      line += fmt::format(
          " {}{}: model {:.4g} sim {:.4g} |", toString(c.candidate.algorithm),
          c.candidate.algorithm == Algorithm::Ring ? std::to_string(c.candidate.channels) : "",
          c.microseconds, sim);
    }
    const bool same = simBest.algorithm == pick.candidate.algorithm &&
                      simBest.channels == pick.candidate.channels;
    ++a.checked;
    a.agreed += same ? 1 : 0;
    if (verbose || !same) std::cout << name << " " << bytes << " B:" << line << "\n";
    EXPECT_TRUE(same) << name << " " << bytes << " B: tuner picks "
                      << toString(pick.candidate.algorithm) << pick.candidate.channels
                      << ", simulator's fastest is " << toString(simBest.algorithm)
                      << simBest.channels;
  }
  return a;
}

TunerTopology fromFile(const std::string& file, int nranks) {
  const topo::Topology t = topo::loadTopologyFile(topo::testing::referenceFile(file));
  return tunerTopologyFor(t, topo::defaultRankNodes(t, nranks));
}

struct Case {
  const char* file;
  int nranks;  // 0: one per GPU
};

class TunerAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(TunerAgreement, PickIsTheSimulatorsFastest) {
  const std::string path = topo::testing::referenceFile(GetParam().file);
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing";
  const TunerTopology t = fromFile(GetParam().file, GetParam().nranks);
  const Agreement a = compare(t, GetParam().file, std::getenv("LOOM_TUNER_VERBOSE") != nullptr);
  std::cout << GetParam().file << " (" << t.nranks << " ranks, " << t.maxChannels()
            << " ring channel(s)): " << a.agreed << "/" << a.checked
            << " sizes agree; worst model error " << a.worstModelError * 100 << "%\n";
}

INSTANTIATE_TEST_SUITE_P(Files, TunerAgreement,
                         ::testing::Values(Case{"dgx1-v100.xml", 0}, Case{"dgx-h100.xml", 0},
                                           Case{"pcie-4gpu-2socket.xml", 0},
                                           Case{"pcie-4gpu-nvlink-bridges.xml", 0},
                                           Case{"pcie-8gpu-2socket.xml", 0},
                                           Case{"dgx2-v100.xml", 0}, Case{"cpu-2socket.xml", 8},
                                           Case{"cluster-16x-h100.xml", 32}));

TEST(Tuner, InCodeTopologiesAgreeToo) {
  compare(tunerTopologyFor(topo::testing::dgx1CubeMesh(), {}), "dgx1-in-code", false);
  const auto cluster = topo::testing::smallCluster(4, 4);
  compare(tunerTopologyFor(cluster, topo::defaultRankNodes(cluster)), "cluster-4x4", false);
}

TEST(Tuner, DirectOnOneHostForSmallMessagesTreeAcrossHosts) {
  const TunerTopology one = tunerTopologyFor(topo::testing::dgx1CubeMesh(),
                                             topo::defaultRankNodes(topo::testing::dgx1CubeMesh()));
  EXPECT_EQ(choose(one, sized(Collective::AllReduce, 64)).candidate.algorithm, Algorithm::Direct);
  EXPECT_FALSE(one.hierarchy.has_value());  // one host: nothing to be hierarchical about
  // One rank per host: no hierarchy either, so tree for latency, ring for bandwidth.
  const auto cluster = topo::testing::smallCluster(16, 1);
  const TunerTopology many = tunerTopologyFor(cluster, topo::defaultRankNodes(cluster));
  EXPECT_FALSE(many.hierarchy.has_value());
  EXPECT_EQ(choose(many, sized(Collective::AllReduce, 64)).candidate.algorithm, Algorithm::Tree);
  EXPECT_EQ(choose(many, sized(Collective::AllReduce, size_t{1} << 30)).candidate.algorithm,
            Algorithm::Ring);
}

// Eight GPUs, two behind each PCIe gen4 x16 uplink (31.5 GB/s), two switches
// per socket, sockets joined by 62.4 GB/s of UPI. The direct all-reduce's
// round k sends rank r to r + k from every rank at once: in round 1 each
// uplink carries one message per direction (full speed); in round 2 both GPUs
// of a switch send up the same uplink (half each); in round 4 all eight
// messages cross UPI, four per direction (62.4 / 4 = 15.6 GB/s each). A ring
// crosses each uplink once per direction, so it wins at large sizes while
// direct keeps small messages, whose time is latency.
TEST(Tuner, DirectPaysForLinksItsRoundsShare) {
  const TunerTopology t = fromFile("pcie-8gpu-2socket.xml", 0);
  ASSERT_EQ(t.nranks, 8);
  EXPECT_NEAR(t.directCost(0, 1).bandwidth, 31.504, 1e-9);      // one switch: PIX
  EXPECT_NEAR(t.directCost(1, 2).bandwidth, 31.504, 1e-9);      // round 1: uplinks used once
  EXPECT_NEAR(t.directCost(0, 2).bandwidth, 31.504 / 2, 1e-9);  // round 2: gpu0, gpu1 share
  EXPECT_NEAR(t.directCost(0, 4).bandwidth, 62.4 / 4, 1e-9);    // round 4: UPI four ways
  EXPECT_NEAR(t.pair(0, 4).bandwidth, 31.504, 1e-9);            // alone, the path's own bandwidth
  EXPECT_EQ(choose(t, sized(Collective::AllReduce, size_t{64} << 10)).candidate.algorithm,
            Algorithm::Direct);
  EXPECT_EQ(choose(t, sized(Collective::AllReduce, size_t{16} << 20)).candidate.algorithm,
            Algorithm::Ring);
  // Hand-built topologies without round costs price direct as alone.
  TunerTopology bare = t;
  bare.directPair = nullptr;
  EXPECT_NEAR(bare.directCost(0, 4).bandwidth, 31.504, 1e-9);
}

// Where the network is the bottleneck, the hierarchical all-reduce sends each
// byte across once per host instead of once per rank: 2 hosts x 4 ranks on
// 1 GB/s NICs pick it for large messages, and its predicted time beats the
// best flat ring by more than the bytes it saves on the crossing (7/4 vs 1 S).
// Loom's own runs cap each channel at kKernelChannelGBps, so across two
// H100 boxes a 1 GiB all-reduce takes every channel the search found (16)
// instead of the one ring that fills the NVSwitch uncapped.
TEST(Tuner, KernelChannelCapAsksForManyChannels) {
  const topo::Topology t =
      topo::loadTopologyFile(topo::testing::referenceFile("cluster-16x-h100.xml"));
  const TunerTopology loom = tunerTopologyFor(t, topo::defaultRankNodes(t, 16));
  EXPECT_EQ(loom.maxChannels(), 16);
  const Choice pick = choose(loom, sized(Collective::AllReduce, size_t{1} << 30));
  EXPECT_EQ(pick.candidate.algorithm, Algorithm::Ring);
  EXPECT_EQ(pick.candidate.channels, 16);
  const TunerTopology links =
      tunerTopologyFor(t, topo::defaultRankNodes(t, 16), topo::HopOptions{});
  EXPECT_EQ(links.maxChannels(), 8);  // one ring per NIC: a NIC's link carries one
}

// Links only, without Loom's per-channel cap: the byte count is the point.
TEST(Tuner, HierarchicalWhereTheNetworkIsTheBottleneck) {
  const auto cluster = topo::testing::smallCluster(2, 4, 1.0);
  const TunerTopology t =
      tunerTopologyFor(cluster, topo::defaultRankNodes(cluster), topo::HopOptions{});
  ASSERT_TRUE(t.hierarchy.has_value());
  EXPECT_EQ(t.hierarchy->hosts.size(), 2u);
  EXPECT_EQ(t.hierarchy->across.size(), 4u);
  Request req = sized(Collective::AllReduce, size_t{64} << 20);
  const Choice pick = choose(t, req);
  EXPECT_EQ(pick.candidate.algorithm, Algorithm::Hierarchical);
  req.overrides.algorithm = Algorithm::Ring;
  const double ring = choose(t, req).microseconds;
  EXPECT_LT(pick.microseconds * 1.5, ring)
      << "hierarchical " << pick.microseconds << " us, ring " << ring << " us";
  // Not offered for other collectives or when hosts hold different rank counts.
  EXPECT_FALSE(modelled(t, Collective::AllGather, Algorithm::Hierarchical));
}

TEST(Tuner, OverridesWin) {
  const auto cluster = topo::testing::smallCluster(4, 4);
  const TunerTopology t = tunerTopologyFor(cluster, topo::defaultRankNodes(cluster));
  Request req = sized(Collective::AllReduce, 64);
  req.overrides.algorithm = Algorithm::Ring;
  req.overrides.channels = 1;
  req.overrides.chunkBytes = 8192;
  const Choice c = choose(t, req);
  EXPECT_EQ(c.candidate.algorithm, Algorithm::Ring);
  EXPECT_EQ(c.candidate.channels, 1);
  EXPECT_EQ(c.candidate.chunkBytes, 8192u);
  EXPECT_FALSE(std::isnan(c.microseconds));
  req.overrides.channels = 99;  // clamped to the rings found
  EXPECT_EQ(choose(t, req).candidate.channels, t.maxChannels());
  // An algorithm the model does not cover for this collective still wins.
  Request gather = sized(Collective::AllGather, 64);
  gather.overrides.algorithm = Algorithm::Tree;
  EXPECT_EQ(choose(t, gather).candidate.algorithm, Algorithm::Tree);
  EXPECT_TRUE(std::isnan(choose(t, gather).microseconds));
  EXPECT_EQ(choose(t, sized(Collective::AllToAll, 64)).candidate.algorithm, Algorithm::Pairwise);
  req.overrides.chunkBytes = 1;
  EXPECT_THROW(choose(t, req), Error);
}

TEST(Tuner, RingCostGrowsLinearlyTreeLogarithmically) {
  const auto cluster = topo::testing::smallCluster(4, 2);
  const topo::RankGraph g(cluster, topo::defaultRankNodes(cluster));
  const auto rings = topo::searchRings(g);
  auto at = [&](int hosts, Algorithm a) {
    const TunerTopology t = replicateHosts(g, rings, hosts);
    return predictMicroseconds(t, Collective::AllReduce, 8, {a, 1, 4096});
  };
  // 8 B: pure latency. Ring doubles with the ranks; tree adds a few hops.
  EXPECT_NEAR(at(64, Algorithm::Ring) / at(32, Algorithm::Ring), 2.0, 0.1);
  EXPECT_LT(at(64, Algorithm::Tree) - at(32, Algorithm::Tree), 0.5 * at(32, Algorithm::Tree));
}

}  // namespace
}  // namespace loom::tuner
