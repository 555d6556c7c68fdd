#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/error.h"
#include "topology/topo_file.h"

namespace loom::topo {
namespace {

std::string dataFile(const std::string& name) {
  return std::string(LOOM_TOPO_DATA_DIR) + "/" + name;
}

int countKind(const Topology& t, NodeKind kind) {
  return static_cast<int>(t.nodesOfKind(kind).size());
}

int countLinks(const Topology& t, LinkKind kind) {
  int n = 0;
  for (const Link& l : t.links) n += l.kind == kind;
  return n;
}

// Line 1 is the root; kBox fills lines 2-6, so a case's own lines start at 7.
const std::string kRoot = "<loom_topology version=\"1\" source=\"unit test\">\n";
const std::string kBox =
    "<host id=\"h\"/>\n"
    "<cpu id=\"h/cpu0\" host=\"h\" numa=\"0\" cores=\"8\"/>\n"
    "<link a=\"h/cpu0\" b=\"h\" kind=\"host\" bandwidth=\"0\"/>\n"
    "<gpu id=\"h/gpu0\" host=\"h\"/>\n"
    "<link a=\"h/cpu0\" b=\"h/gpu0\" kind=\"pcie\" bandwidth=\"16\"/>\n";
std::string withBox(const std::string& extra) {
  return kRoot + kBox + extra + "</loom_topology>\n";
}

// Parses `xml` expecting a rejection whose message contains every fragment.
void expectRejected(const std::string& xml, std::initializer_list<std::string> fragments) {
  try {
    parseTopologyXml(xml, "t.xml");
    ADD_FAILURE() << "accepted:\n" << xml;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    for (const std::string& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << f;
    }
  }
}

struct ReferenceCase {
  const char* file;
  int gpus, nics, cpus, hosts, pciSwitches, nvswitches, nvlinks;
};

class ReferenceFile : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(ReferenceFile, LoadsWithTheDocumentedShape) {
  const ReferenceCase& c = GetParam();
  const Topology t = loadTopologyFile(dataFile(c.file));
  EXPECT_EQ(countKind(t, NodeKind::Gpu), c.gpus);
  EXPECT_EQ(countKind(t, NodeKind::Nic), c.nics);
  EXPECT_EQ(countKind(t, NodeKind::Cpu), c.cpus);
  EXPECT_EQ(countKind(t, NodeKind::Host), c.hosts);
  EXPECT_EQ(countKind(t, NodeKind::PciSwitch), c.pciSwitches);
  EXPECT_EQ(countKind(t, NodeKind::NvSwitch), c.nvswitches);
  EXPECT_EQ(countKind(t, NodeKind::Fabric), 1);
  EXPECT_EQ(countLinks(t, LinkKind::NvLink), c.nvlinks);
  EXPECT_EQ(countLinks(t, LinkKind::Host), c.cpus);
  EXPECT_EQ(countLinks(t, LinkKind::Net), c.nics);
  EXPECT_NE(t.source.find("NVIDIA"), std::string::npos) << t.source;
  EXPECT_NO_THROW(validateTopology(t));
}

TEST_P(ReferenceFile, RoundTripsThroughSaveAndLoad) {
  const Topology t = loadTopologyFile(dataFile(GetParam().file));
  const std::string saved = saveTopologyXml(t);
  const Topology back = parseTopologyXml(saved, "saved");
  EXPECT_TRUE(sameTopology(t, back));
  EXPECT_EQ(saveTopologyXml(back), saved);
}

INSTANTIATE_TEST_SUITE_P(
    Topo, ReferenceFile,
    ::testing::Values(ReferenceCase{"dgx1-v100.xml", 8, 4, 2, 1, 4, 0, 16},
                      ReferenceCase{"dgx-h100.xml", 8, 8, 2, 1, 8, 4, 32},
                      ReferenceCase{"pcie-4gpu-2socket.xml", 4, 1, 2, 1, 2, 0, 0},
                      ReferenceCase{"pcie-4gpu-nvlink-bridges.xml", 4, 1, 2, 1, 2, 0, 4},
                      ReferenceCase{"cpu-2socket.xml", 0, 1, 2, 1, 0, 0, 0},
                      ReferenceCase{"cluster-16x-h100.xml", 128, 128, 32, 16, 128, 64, 512}),
    [](const auto& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find('.'));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(TopoFile, Dgx1LanesFollowTheHybridCubeMesh) {
  const Topology t = loadTopologyFile(dataFile("dgx1-v100.xml"));
  std::vector<int> linksPerGpu(8, 0);
  int doubles = 0;
  for (const Link& l : t.links) {
    if (l.kind != LinkKind::NvLink) continue;
    EXPECT_EQ(l.generation, 2);
    EXPECT_DOUBLE_EQ(l.bandwidth, 25.0 * l.lanes);
    for (int end : {l.a, l.b}) linksPerGpu[t.nodes[end].id.back() - '0'] += l.lanes;
    doubles += l.lanes == 2;
  }
  EXPECT_EQ(linksPerGpu, std::vector<int>(8, 6));  // six NVLinks per V100
  EXPECT_EQ(doubles, 8);
}

TEST(TopoFile, SavePreservesEveryField) {
  Topology t = loadTopologyFile(dataFile("pcie-4gpu-2socket.xml"));
  t.nodes[t.find("pcie4/gpu2")].rank = 5;
  t.links.back().latency = 0.1 + 0.2;  // not exactly representable in short decimal
  t.source = "quotes \" and <angles> & ampersands";
  const Topology back = parseTopologyXml(saveTopologyXml(t), "saved");
  EXPECT_TRUE(sameTopology(t, back));
  EXPECT_EQ(back.nodes[back.find("pcie4/gpu2")].rank, 5);
  EXPECT_EQ(back.links.back().latency, 0.1 + 0.2);
  EXPECT_EQ(back.source, t.source);
  Topology changed = back;
  changed.links[3].lanes += 1;
  EXPECT_FALSE(sameTopology(t, changed));
}

TEST(TopoFile, SaveRefusesAnInvalidGraph) {
  Topology t = loadTopologyFile(dataFile("cpu-2socket.xml"));
  t.links.back().bandwidth = -1;
  EXPECT_THROW(saveTopologyXml(t), Error);
}

TEST(TopoFile, MinimalBoxParsesWithDefaults) {
  const Topology t = parseTopologyXml(withBox(""), "t.xml");
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.source, "unit test");
  EXPECT_EQ(t.nodes[1].cores, 8);
  EXPECT_EQ(t.nodes[2].numa, -1);
  EXPECT_EQ(t.nodes[2].rank, -1);
  EXPECT_EQ(t.nodes[2].host, 0);
  EXPECT_EQ(t.links[1].lanes, 1);
  EXPECT_EQ(t.links[1].latency, 0.0);
}

TEST(TopoFileErrors, MissingAttributes) {
  expectRejected(withBox("<link a=\"h/cpu0\" b=\"h/gpu0\" kind=\"nvlink\"/>\n"),
                 {"t.xml:7: <link a=\"h/cpu0\" b=\"h/gpu0\">: missing attribute 'bandwidth'"});
  expectRejected(withBox("<gpu host=\"h\"/>\n"), {"t.xml:7: <gpu>: missing attribute 'id'"});
  expectRejected(withBox("<nic id=\"h/nic0\"/>\n"),
                 {"t.xml:7: <nic id=\"h/nic0\">: missing attribute 'host'"});
  expectRejected(withBox("<link b=\"h/gpu0\" kind=\"pcie\" bandwidth=\"1\"/>\n"),
                 {"t.xml:7:", "missing attribute 'a'"});
}

TEST(TopoFileErrors, UnknownElementsKindsAndAttributes) {
  expectRejected(withBox("<tpu id=\"h/tpu0\" host=\"h\"/>\n"),
                 {"t.xml:7: <tpu id=\"h/tpu0\">: unknown element"});
  expectRejected(withBox("<link a=\"h/cpu0\" b=\"h/gpu0\" kind=\"infiniband\" bandwidth=\"1\"/>\n"),
                 {"t.xml:7: <link", "unknown link kind 'infiniband'"});
  expectRejected(withBox("<gpu id=\"h/gpu1\" host=\"h\" bandwith=\"3\"/>\n"),
                 {"t.xml:7: <gpu id=\"h/gpu1\">: unknown attribute 'bandwith'"});
  expectRejected(withBox("<fabric id=\"f\" host=\"h\"/>\n"),
                 {"t.xml:7: <fabric id=\"f\">: unknown attribute 'host'"});
}

TEST(TopoFileErrors, BadNumbers) {
  const std::string link = "<link a=\"h/cpu0\" b=\"h/gpu0\" kind=\"nvlink\" ";
  expectRejected(withBox(link + "bandwidth=\"fast\"/>\n"),
                 {"t.xml:7:", "bandwidth='fast' is not a finite number"});
  expectRejected(withBox(link + "bandwidth=\"1e999\"/>\n"), {"t.xml:7:", "bandwidth='1e999'"});
  expectRejected(withBox(link + "bandwidth=\"nan\"/>\n"), {"t.xml:7:", "bandwidth='nan'"});
  expectRejected(withBox(link + "bandwidth=\"5\" lanes=\"16x\"/>\n"),
                 {"t.xml:7:", "lanes='16x' is not an integer"});
  expectRejected(withBox("<gpu id=\"g\" host=\"h\" numa=\"1.5\"/>\n"),
                 {"t.xml:7: <gpu id=\"g\">: numa='1.5' is not an integer"});
  expectRejected(withBox("<gpu id=\"g\" host=\"h\" rank=\"99999999999\"/>\n"),
                 {"t.xml:7:", "rank='99999999999' is not an integer"});
}

TEST(TopoFileErrors, DanglingReferences) {
  expectRejected(withBox("<link a=\"h/cpu0\" b=\"h/gpu9\" kind=\"pcie\" bandwidth=\"1\"/>\n"),
                 {"t.xml:7: <link a=\"h/cpu0\" b=\"h/gpu9\">: b='h/gpu9' names no node"});
  expectRejected(withBox("<gpu id=\"h/gpu1\" host=\"h2\"/>\n"),
                 {"t.xml:7: <gpu id=\"h/gpu1\">: host='h2' names no node"});
  expectRejected(withBox("<gpu id=\"h/gpu1\" host=\"h/cpu0\"/>\n"),
                 {"t.xml:7:", "host='h/cpu0' is a <cpu>, not a <host>"});
}

TEST(TopoFileErrors, DuplicateIdNamesBothLines) {
  expectRejected(withBox("<gpu id=\"h/gpu0\" host=\"h\"/>\n"),
                 {"t.xml:7: <gpu id=\"h/gpu0\">: id 'h/gpu0' is already used at line 5"});
}

TEST(TopoFileErrors, PcieCycleNamesTheClosingLink) {
  expectRejected(withBox("<pci id=\"h/sw\" host=\"h\"/>\n"
                         "<link a=\"h/cpu0\" b=\"h/sw\" kind=\"pcie\" bandwidth=\"16\"/>\n"
                         "<link a=\"h/sw\" b=\"h/gpu0\" kind=\"pcie\" bandwidth=\"16\"/>\n"),
                 {"t.xml:9: <link a=\"h/sw\" b=\"h/gpu0\">:", "already has a pcie link"});
  expectRejected(withBox("<pci id=\"h/sw\" host=\"h\"/>\n"
                         "<pci id=\"h/sw2\" host=\"h\"/>\n"
                         "<link a=\"h/cpu0\" b=\"h/sw\" kind=\"pcie\" bandwidth=\"16\"/>\n"
                         "<link a=\"h/sw\" b=\"h/sw2\" kind=\"pcie\" bandwidth=\"16\"/>\n"
                         "<link a=\"h/sw2\" b=\"h/cpu0\" kind=\"pcie\" bandwidth=\"16\"/>\n"),
                 {"t.xml:11: <link a=\"h/sw2\" b=\"h/cpu0\">:", "cycle in the pcie tree"});
}

TEST(TopoFileErrors, NonPositiveBandwidth) {
  for (const char* bw : {"0", "-2.5"}) {
    expectRejected(withBox(std::string("<link a=\"h/gpu0\" b=\"h/gpu0\" kind=\"nvlink\" "
                                       "bandwidth=\"") +
                           bw + "\"/>\n"),
                   {"t.xml:7: <link"});
    expectRejected(withBox(std::string("<gpu id=\"g\" host=\"h\"/>\n<link a=\"h/gpu0\" b=\"g\" "
                                       "kind=\"nvlink\" bandwidth=\"") +
                           bw + "\"/>\n"),
                   {"t.xml:8: <link a=\"h/gpu0\" b=\"g\">:", "is not positive"});
  }
}

TEST(TopoFileErrors, ConventionProblemsPointAtTheElement) {
  // A gpu outside the pcie tree is reported at the gpu's own line.
  expectRejected(withBox("<gpu id=\"h/gpu1\" host=\"h\"/>\n"),
                 {"t.xml:7: <gpu id=\"h/gpu1\">:", "not under any cpu"});
  expectRejected(withBox("<link a=\"h/gpu0\" b=\"h\" kind=\"host\" bandwidth=\"0\"/>\n"),
                 {"t.xml:7:", "joins a cpu to its host"});
}

TEST(TopoFileErrors, DocumentLevelProblems) {
  expectRejected(kRoot + kBox + "<gpu id=\"x\"\n", {"t.xml:7: document: XML error"});
  expectRejected("<topology version=\"1\"/>", {"t.xml:1: <topology>: root element must be"});
  expectRejected("<loom_topology/>", {"t.xml:1: <loom_topology>: missing attribute 'version'"});
  expectRejected("<loom_topology version=\"2\"/>", {"version '2' is not supported"});
  expectRejected("", {"t.xml:1: document: XML error: No document element found"});
  expectRejected(withBox("stray text\n"), {"<loom_topology>: unexpected text"});
  expectRejected(withBox("<gpu id=\"g\" host=\"h\"><bus/></gpu>\n"),
                 {"t.xml:7: <gpu id=\"g\">: must be empty"});
  expectRejected(withBox("<gpu id=\"g\" host=\"h\" id=\"g2\"/>\n"), {"t.xml:7"});
}

TEST(TopoFileErrors, MissingFileNamesThePath) {
  try {
    loadTopologyFile("/nonexistent/loom/topo.xml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/loom/topo.xml"), std::string::npos);
  }
}

// 10^5 GPUs under one socket: loads in well under the bound; the same file
// with a dangling reference in its last line is rejected at that line.
std::string manyGpus(int gpus, bool danglingAtEnd) {
  std::string xml = kRoot + kBox;
  xml.reserve(gpus * 120);
  for (int i = 1; i < gpus; ++i) {
    xml += fmt::format("<gpu id=\"h/g{}\" host=\"h\"/>\n", i);
    xml += fmt::format("<link a=\"h/cpu0\" b=\"h/g{}\" kind=\"pcie\" bandwidth=\"16\"/>\n", i);
  }
  if (danglingAtEnd) xml += "<link a=\"h/cpu0\" b=\"h/nowhere\" kind=\"pcie\" bandwidth=\"1\"/>\n";
  return xml + "</loom_topology>\n";
}

TEST(TopoFileScale, HundredThousandNodesLoadWithinBound) {
  const std::string xml = manyGpus(100'000, false);
  const auto start = std::chrono::steady_clock::now();
  const Topology t = parseTopologyXml(xml, "big.xml");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.nodes.size(), 100'002u);
  EXPECT_EQ(countKind(t, NodeKind::Gpu), 100'000);
  // Generous: it takes well under a second; a quadratic step would take minutes.
  EXPECT_LT(seconds, 10.0);

  const int lastLine = 2 + 5 + 2 * (100'000 - 1);
  expectRejected(manyGpus(100'000, true),
                 {fmt::format("t.xml:{}: <link a=\"h/cpu0\" b=\"h/nowhere\">", lastLine)});
}

TEST(TopoFileScale, RefusesTooManyElementsOrBytes) {
  std::string xml = kRoot;
  xml.reserve(1'000'001 * 16);
  for (int i = 0; i <= 1'000'000; ++i) xml += "<host id=\"x\"/>\n";
  xml += "</loom_topology>\n";
  expectRejected(xml, {"t.xml:1000002: <host id=\"x\">: more than 1000000 elements"});
  expectRejected(std::string((size_t{64} << 20) + 1, ' '),
                 {"t.xml:1: document: 67108865 bytes is over the 64 MiB limit"});
}

}  // namespace
}  // namespace loom::topo
