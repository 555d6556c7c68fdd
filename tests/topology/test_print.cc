#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tools/loom-topo/topology_print.h"
#include "topology/topo_file.h"

namespace loom::topo {
namespace {

Topology reference(const char* name) {
  return loadTopologyFile(std::string(LOOM_TOPO_DATA_DIR) + "/" + name);
}

// The cells of the `occurrence`-th output line that starts with `label`
// (header lines start with blanks, so only rows match).
std::vector<std::string> row(const std::string& text, const std::string& label, int occurrence) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(label + " ", 0) != 0) continue;
    std::istringstream cells(line);
    std::vector<std::string> out;
    for (std::string cell; cells >> cell;) out.push_back(cell);
    if (occurrence-- == 0) return out;
  }
  return {};
}

TEST(TopologyPrint, SummaryTreeNestsPcieAndListsNvlinks) {
  std::ostringstream out;
  printSummaryTree(out, reference("dgx1-v100.xml"));
  const std::string text = out.str();
  EXPECT_NE(text.find("topology: NVIDIA DGX-1 With Tesla V100"), std::string::npos);
  EXPECT_NE(text.find("\n  cpu dgx1/cpu0 \"Intel Xeon E5-2698 v4\" numa 0, 20 cores\n"
                      "    pci dgx1/pci0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n      gpu dgx1/gpu0 \"Tesla V100-SXM2-16GB\" 0000:06:00.0  [pcie 15.76 "
                      "GB/s (gen3 x16)]\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dgx1/gpu0 <-> dgx1/gpu3  [nvlink 50 GB/s (2 links, NVLink 2)]"),
            std::string::npos);
  EXPECT_NE(text.find("fabric ib-edr \"InfiniBand EDR\"\n  dgx1/nic0  [net 12.5 GB/s]"),
            std::string::npos)
      << text;
}

TEST(TopologyPrint, PathMatrixLikeNvidiaSmi) {
  std::ostringstream out;
  printPathMatrix(out, reference("dgx1-v100.xml"));
  const std::string text = out.str();
  EXPECT_EQ(row(text, "gpu0", 0),
            (std::vector<std::string>{"gpu0", "X", "NVL", "NVL", "NVL", "NVL", "SYS", "SYS", "SYS",
                                      "PIX", "PHB", "SYS", "SYS"}))
      << text;
  EXPECT_EQ(row(text, "gpu0", 1),
            (std::vector<std::string>{"gpu0", "X", "25.0", "25.0", "50.0", "50.0", "15.8", "15.8",
                                      "15.8", "15.8", "15.8", "15.8", "15.8"}))
      << text;
  EXPECT_EQ(row(text, "nic3", 0)[12], "X");
}

// 450 GB/s NVLink next to 450: the columns stay apart; the affinity block
// says which socket each device hangs off (two sockets of four GPUs).
TEST(TopologyPrint, WideBandwidthsStayApartAndAffinityIsShown) {
  std::ostringstream out;
  printPathMatrix(out, reference("dgx-h100.xml"));
  const std::string text = out.str();
  const std::vector<std::string> bandwidths = row(text, "gpu0", 1);
  ASSERT_EQ(bandwidths.size(), 17u) << text;
  EXPECT_EQ(bandwidths[2], "450.0") << text;
  EXPECT_EQ(bandwidths[8], "450.0") << text;
  EXPECT_EQ(row(text, "gpu0", 2), (std::vector<std::string>{"gpu0", "cpu0", "0", "56"})) << text;
  EXPECT_EQ(row(text, "gpu7", 2), (std::vector<std::string>{"gpu7", "cpu1", "1", "56"})) << text;
  EXPECT_EQ(row(text, "nic4", 2)[2], "1") << text;
}

TEST(TopologyPrint, CpuOnlyHostHasOnlyItsNicInTheMatrix) {
  std::ostringstream out;
  printPathMatrix(out, reference("cpu-2socket.xml"));
  EXPECT_EQ(row(out.str(), "nic0", 0), (std::vector<std::string>{"nic0", "X"})) << out.str();
  Topology bare = reference("cpu-2socket.xml");
  bare.nodes.erase(bare.nodes.begin() + bare.find("cpu2/nic0"), bare.nodes.end());
  bare.links.erase(bare.links.begin() + 3, bare.links.end());
  std::ostringstream none;
  printPathMatrix(none, bare);
  EXPECT_EQ(none.str(), "no GPUs or NICs: no path matrix\n");
}

TEST(TopologyPrint, JsonCarriesGraphAndPaths) {
  const Topology t = reference("dgx-h100.xml");
  std::ostringstream out;
  printTopologyJson(out, t);
  const nlohmann::json json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["nodes"].size(), t.nodes.size());
  EXPECT_EQ(json["links"].size(), t.links.size());
  EXPECT_EQ(json["nodes"][t.find("dgxh100/gpu3")]["host"], "dgxh100");
  EXPECT_EQ(json["paths"]["endpoints"].size(), 16u);
  EXPECT_EQ(json["paths"]["endpoints"][0], "dgxh100/gpu0");
  EXPECT_EQ(json["paths"]["class"][0][5], "NVL");
  EXPECT_EQ(json["paths"]["bandwidth"][0][5], 450.0);
  EXPECT_EQ(json["paths"]["class"][2][8 + 2], "PIX");
}

}  // namespace
}  // namespace loom::topo
