// Builds small topologies by hand for tests, keeping the model's conventions
// (a cpu's host link, host indices) so each test states only what it is about.
#pragma once

#include <string>
#include <utility>

#include "topology/graph.h"

namespace loom::topo::testing {

class GraphBuilder {
 public:
  GraphBuilder() { t_.source = "test"; }

  int host(const std::string& id) { return node(NodeKind::Host, -1, id); }

  int cpu(int host, const std::string& id, int numa = 0, int cores = 4) {
    const int cpu = node(NodeKind::Cpu, host, id);
    t_.nodes[cpu].numa = numa;
    t_.nodes[cpu].cores = cores;
    link(cpu, host, LinkKind::Host, 0.0, 0.0);
    return cpu;
  }

  int node(NodeKind kind, int host, const std::string& id) {
    Node n;
    n.kind = kind;
    n.id = id;
    n.host = host;
    return t_.addNode(std::move(n));
  }

  int fabric(const std::string& id) { return node(NodeKind::Fabric, -1, id); }

  int link(int a, int b, LinkKind kind, double bandwidth, double latency = 1.0, int lanes = 1) {
    Link l;
    l.a = a;
    l.b = b;
    l.kind = kind;
    l.bandwidth = bandwidth;
    l.latency = latency;
    l.lanes = lanes;
    return t_.addLink(l);
  }

  Topology& topology() { return t_; }
  const Topology& topologyConst() const { return t_; }
  Topology take() { return std::move(t_); }

 private:
  Topology t_;
};

}  // namespace loom::topo::testing
