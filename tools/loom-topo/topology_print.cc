#include "tools/loom-topo/topology_print.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "topology/paths.h"

namespace loom::topo {
namespace {

std::vector<int> gpusThenNics(const Topology& t) {
  std::vector<int> out = t.nodesOfKind(NodeKind::Gpu);
  const std::vector<int> nics = t.nodesOfKind(NodeKind::Nic);
  out.insert(out.end(), nics.begin(), nics.end());
  return out;
}

std::string linkText(const Link& l) {
  std::string out = fmt::format("{} {:.4g} GB/s", linkKindName(l.kind), l.bandwidth);
  if (l.kind == LinkKind::Pcie && l.generation > 0) {
    out += fmt::format(" (gen{} x{})", l.generation, l.lanes);
  } else if (l.kind == LinkKind::NvLink) {
    out += fmt::format(" ({} link{}{})", l.lanes, l.lanes == 1 ? "" : "s",
                       l.generation > 0 ? fmt::format(", NVLink {}", l.generation) : "");
  }
  return out;
}

std::string nodeText(const Node& n) {
  std::string out = fmt::format("{} {}", nodeKindName(n.kind), n.id);
  if (!n.name.empty()) out += fmt::format(" \"{}\"", n.name);
  if (!n.busId.empty()) out += " " + n.busId;
  if (n.kind == NodeKind::Cpu) out += fmt::format(" numa {}, {} cores", n.numa, n.cores);
  if (n.rank >= 0) out += fmt::format(" rank {}", n.rank);
  return out;
}

// The links that hang a device off its cpu: PCIe, and Grace's NVLink-C2C.
bool treeLink(const Link& link) {
  return link.kind == LinkKind::Pcie || link.kind == LinkKind::NvLinkC2C;
}

// The PCIe tree below one cpu, depth first, each node with the link above it.
void printPcieTree(std::ostream& out, const Topology& t, int node, int depth,
                   std::vector<bool>& shown) {
  shown[node] = true;
  for (int l : t.linksOf(node)) {
    const Link& link = t.links[l];
    const int child = t.other(link, node);
    if (!treeLink(link) || shown[child]) continue;
    out << std::string(2 * depth, ' ') << nodeText(t.nodes[child]) << "  [" << linkText(link)
        << "]\n";
    printPcieTree(out, t, child, depth + 1, shown);
  }
}

/// Short labels inside one host ("gpu3"), full ids across hosts.
std::vector<std::string> labels(const Topology& t, const std::vector<int>& endpoints) {
  const bool oneHost = t.nodesOfKind(NodeKind::Host).size() <= 1;
  std::vector<std::string> out;
  for (int e : endpoints) {
    const std::string& id = t.nodes[e].id;
    const size_t slash = id.rfind('/');
    out.push_back(oneHost && slash != std::string::npos ? id.substr(slash + 1) : id);
  }
  return out;
}

template <typename Cell>
void printTable(std::ostream& out, const std::string& title, const std::vector<std::string>& names,
                Cell cell) {
  // Wide enough for every label and every cell, plus a space: 450.0 next to
  // 450.0 must not read as one number.
  size_t width = 5;
  for (const std::string& n : names) width = std::max(width, n.size() + 1);
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = 0; j < names.size(); ++j) width = std::max(width, cell(i, j).size() + 1);
  }
  out << title << "\n" << std::string(width, ' ');
  for (const std::string& n : names) out << fmt::format("{:>{}}", n, width);
  out << "\n";
  for (size_t i = 0; i < names.size(); ++i) {
    out << fmt::format("{:<{}}", names[i], width);
    for (size_t j = 0; j < names.size(); ++j) out << fmt::format("{:>{}}", cell(i, j), width);
    out << "\n";
  }
}

/// The CPU (socket, NUMA node) whose PCIe tree holds `node`, or -1.
int attachedCpu(const Topology& t, int node) {
  std::vector<bool> seen(t.nodes.size(), false);
  std::vector<int> todo{node};
  seen[static_cast<size_t>(node)] = true;
  for (size_t next = 0; next < todo.size(); ++next) {
    const int n = todo[next];
    if (t.nodes[static_cast<size_t>(n)].kind == NodeKind::Cpu) return n;
    for (int l : t.linksOf(n)) {
      const Link& link = t.links[static_cast<size_t>(l)];
      const int other = t.other(link, n);
      if (!treeLink(link) || seen[static_cast<size_t>(other)]) continue;
      seen[static_cast<size_t>(other)] = true;
      todo.push_back(other);
    }
  }
  return -1;
}

/// nvidia-smi's affinity columns: the CPU each GPU and NIC hangs off.
void printAffinity(std::ostream& out, const Topology& t, const std::vector<int>& endpoints,
                   const std::vector<std::string>& names) {
  size_t width = 5;
  for (const std::string& n : names) width = std::max(width, n.size() + 1);
  out << "CPU affinity (the socket whose PCIe tree holds each device):\n"
      << fmt::format("{:<{}}{:>10}{:>6}{:>7}\n", "", width, "cpu", "numa", "cores");
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const int cpu = attachedCpu(t, endpoints[i]);
    if (cpu < 0) {
      out << fmt::format("{:<{}}{:>10}{:>6}{:>7}\n", names[i], width, "-", "-", "-");
      continue;
    }
    const Node& c = t.nodes[static_cast<size_t>(cpu)];
    const std::string id = c.id.substr(c.id.rfind('/') + 1);
    out << fmt::format("{:<{}}{:>10}{:>6}{:>7}\n", names[i], width, id, c.numa, c.cores);
  }
}

}  // namespace

void printSummaryTree(std::ostream& out, const Topology& topology) {
  const Topology& t = topology;
  out << "topology: " << (t.source.empty() ? "(no source)" : t.source) << "\n";
  std::vector<bool> shown(t.nodes.size(), false);
  for (int host : t.nodesOfKind(NodeKind::Host)) {
    out << nodeText(t.nodes[host]) << "\n";
    for (int cpu : t.nodesOfKind(NodeKind::Cpu)) {
      if (t.nodes[cpu].host != host) continue;
      out << "  " << nodeText(t.nodes[cpu]) << "\n";
      printPcieTree(out, t, cpu, 2, shown);
    }
    for (int nvswitch : t.nodesOfKind(NodeKind::NvSwitch)) {
      if (t.nodes[nvswitch].host == host) out << "  " << nodeText(t.nodes[nvswitch]) << "\n";
    }
    for (const Link& l : t.links) {
      const bool inside = t.nodes[l.a].host == host && t.nodes[l.b].host == host;
      if (inside && (l.kind == LinkKind::Smp || l.kind == LinkKind::NvLink)) {
        out << "  " << t.nodes[l.a].id << " <-> " << t.nodes[l.b].id << "  [" << linkText(l)
            << "]\n";
      }
    }
  }
  // NvSwitches shared by several hosts (an NVLink domain), with how many
  // GPUs reach each.
  for (int nvswitch : t.nodesOfKind(NodeKind::NvSwitch)) {
    if (t.nodes[nvswitch].host >= 0) continue;
    const std::vector<int> links = t.linksOf(nvswitch);
    out << nodeText(t.nodes[nvswitch]) << fmt::format(", shared: {} nvlink(s)", links.size());
    if (!links.empty()) out << "  [each " << linkText(t.links[links.front()]) << "]";
    out << "\n";
  }
  for (int fabric : t.nodesOfKind(NodeKind::Fabric)) {
    out << nodeText(t.nodes[fabric]) << "\n";
    for (int l : t.linksOf(fabric)) {
      out << "  " << t.nodes[t.other(t.links[l], fabric)].id << "  [" << linkText(t.links[l])
          << "]\n";
    }
  }
}

void printPathMatrix(std::ostream& out, const Topology& topology) {
  const std::vector<int> endpoints = gpusThenNics(topology);
  if (endpoints.empty()) {
    out << "no GPUs or NICs: no path matrix\n";
    return;
  }
  const PathMatrix m = computePaths(topology, endpoints);
  const std::vector<std::string> names = labels(topology, endpoints);
  printTable(out,
             "Path classes (X self, NVL nvlink, PIX one pci switch, PXB several, PHB one host "
             "bridge, NODE host bridges of one NUMA node, SYS across NUMA nodes, NET network, - "
             "none):",
             names, [&](size_t i, size_t j) { return std::string(pathClassName(m.at(i, j).cls)); });
  out << "\n";
  printTable(out, "Bottleneck bandwidth, GB/s per direction:", names, [&](size_t i, size_t j) {
    const Path& p = m.at(i, j);
    if (p.cls == PathClass::Self) return std::string("X");
    if (p.cls == PathClass::None) return std::string("-");
    return fmt::format("{:.1f}", p.bandwidth);
  });
  out << "\n";
  printAffinity(out, topology, endpoints, names);
}

void printTopologyJson(std::ostream& out, const Topology& topology) {
  const Topology& t = topology;
  nlohmann::ordered_json json;
  json["source"] = t.source;
  json["nodes"] = nlohmann::ordered_json::array();
  for (const Node& n : t.nodes) {
    json["nodes"].push_back({{"id", n.id},
                             {"kind", nodeKindName(n.kind)},
                             {"host", n.host >= 0 ? t.nodes[n.host].id : ""},
                             {"name", n.name},
                             {"bus", n.busId},
                             {"numa", n.numa},
                             {"cores", n.cores},
                             {"rank", n.rank}});
  }
  json["links"] = nlohmann::ordered_json::array();
  for (const Link& l : t.links) {
    json["links"].push_back({{"a", t.nodes[l.a].id},
                             {"b", t.nodes[l.b].id},
                             {"kind", linkKindName(l.kind)},
                             {"bandwidth", l.bandwidth},
                             {"latency", l.latency},
                             {"lanes", l.lanes},
                             {"generation", l.generation}});
  }
  const std::vector<int> endpoints = gpusThenNics(t);
  const PathMatrix m = computePaths(t, endpoints);
  nlohmann::ordered_json paths;
  paths["endpoints"] = nlohmann::ordered_json::array();
  for (int e : endpoints) paths["endpoints"].push_back(t.nodes[e].id);
  paths["class"] = nlohmann::ordered_json::array();
  paths["bandwidth"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < endpoints.size(); ++i) {
    nlohmann::ordered_json classes = nlohmann::ordered_json::array();
    nlohmann::ordered_json widths = nlohmann::ordered_json::array();
    for (size_t j = 0; j < endpoints.size(); ++j) {
      classes.push_back(pathClassName(m.at(i, j).cls));
      widths.push_back(m.at(i, j).bandwidth);
    }
    paths["class"].push_back(std::move(classes));
    paths["bandwidth"].push_back(std::move(widths));
  }
  json["paths"] = std::move(paths);
  out << json.dump(2) << "\n";
}

}  // namespace loom::topo
