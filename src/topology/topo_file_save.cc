// Saving topology files, and the equality a save/load round trip keeps.
#include <algorithm>
#include <pugixml.hpp>
#include <sstream>

#include "core/error.h"
#include "topology/topo_file.h"
#include "topology/topo_file_schema.h"

namespace loom::topo {
namespace {

// Shortest text that reads back to the same double, so a round trip is exact.
std::string exact(double value) { return fmt::format("{}", value); }

void setIf(pugi::xml_node& e, const char* key, bool present, const std::string& value) {
  if (present) e.append_attribute(key).set_value(value.c_str());
}

void appendNode(pugi::xml_node& root, const Topology& t, const Node& node) {
  pugi::xml_node e = root.append_child(nodeKindName(node.kind));
  e.append_attribute(kIdAttr).set_value(node.id.c_str());
  setIf(e, kHostAttr, node.host >= 0, node.host >= 0 ? t.nodes[node.host].id : "");
  setIf(e, kNameAttr, !node.name.empty(), node.name);
  setIf(e, kBusAttr, !node.busId.empty(), node.busId);
  setIf(e, kNumaAttr, node.numa != -1, std::to_string(node.numa));
  setIf(e, kCoresAttr, node.cores != 0, std::to_string(node.cores));
  setIf(e, kRankAttr, node.rank != -1, std::to_string(node.rank));
}

void appendLink(pugi::xml_node& root, const Topology& t, const Link& link) {
  pugi::xml_node e = root.append_child(kLinkElement);
  e.append_attribute(kLinkA).set_value(t.nodes[link.a].id.c_str());
  e.append_attribute(kLinkB).set_value(t.nodes[link.b].id.c_str());
  e.append_attribute(kKindAttr).set_value(linkKindName(link.kind));
  e.append_attribute(kBandwidthAttr).set_value(exact(link.bandwidth).c_str());
  setIf(e, kLatencyAttr, link.latency != 0.0, exact(link.latency));
  setIf(e, kLanesAttr, link.lanes != 1, std::to_string(link.lanes));
  setIf(e, kGenerationAttr, link.generation != 0, std::to_string(link.generation));
  setIf(e, kBridgeAttr, !link.bridge.empty(), link.bridge);
}

}  // namespace

std::string saveTopologyXml(const Topology& topology) {
  // Only valid graphs are written, so every saved file loads back.
  validateTopology(topology);
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child(kRootElement);
  root.append_attribute(kVersionAttr).set_value(kFormatVersion);
  root.append_attribute(kSourceAttr).set_value(topology.source.c_str());
  for (const Node& node : topology.nodes) appendNode(root, topology, node);
  for (const Link& link : topology.links) appendLink(root, topology, link);
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

bool sameTopology(const Topology& a, const Topology& b) {
  auto sameNode = [](const Node& x, const Node& y) {
    return x.kind == y.kind && x.id == y.id && x.host == y.host && x.name == y.name &&
           x.busId == y.busId && x.numa == y.numa && x.cores == y.cores && x.rank == y.rank;
  };
  auto sameLink = [](const Link& x, const Link& y) {
    return x.a == y.a && x.b == y.b && x.kind == y.kind && x.bandwidth == y.bandwidth &&
           x.latency == y.latency && x.lanes == y.lanes && x.generation == y.generation &&
           x.bridge == y.bridge;
  };
  return a.source == b.source &&
         std::equal(a.nodes.begin(), a.nodes.end(), b.nodes.begin(), b.nodes.end(), sameNode) &&
         std::equal(a.links.begin(), a.links.end(), b.links.begin(), b.links.end(), sameLink);
}

}  // namespace loom::topo
