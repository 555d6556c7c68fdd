// Fuzzes parseTopologyXml, which reads topology files users hand to loom-topo
// and LOOM_TOPO_FILE. Accepted graphs must be valid and survive save -> parse
// unchanged; refused ones must be InvalidArgument in the documented
// "<source>:<line>: <element>: <problem>" shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "tests/fuzz/fuzz_check.h"
#include "topology/paths.h"
#include "topology/topo_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  loom::topo::Topology topology;
  try {
    topology = loom::topo::parseTopologyXml(text, "fuzz.xml");
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::InvalidArgument);
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.xml:", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(!loom::topo::findTopologyProblem(topology));
  const std::string saved = loom::topo::saveTopologyXml(topology);
  const loom::topo::Topology again = loom::topo::parseTopologyXml(saved, "saved");
  FUZZ_CHECK(loom::topo::sameTopology(topology, again));
  FUZZ_CHECK(loom::topo::saveTopologyXml(again) == saved);
  // Paths over any accepted graph terminate and are symmetric in bandwidth (up
  // to rounding: NVLink max flows add doubles in a direction-dependent order).
  const std::vector<int> gpus = topology.nodesOfKind(loom::topo::NodeKind::Gpu);
  if (gpus.size() <= 16) {
    const loom::topo::PathMatrix m = loom::topo::computePaths(topology, gpus);
    for (size_t i = 0; i < gpus.size(); ++i) {
      for (size_t j = 0; j < gpus.size(); ++j) {
        const double there = m.at(i, j).bandwidth, back = m.at(j, i).bandwidth;
        FUZZ_CHECK(std::fabs(there - back) <= 1e-9 * std::max(there, back));
      }
    }
  }
  return 0;
}
