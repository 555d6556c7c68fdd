// Topologies for the search and tuner tests, built in code so they do not
// depend on the reference files: a DGX-1 hybrid cube-mesh, random single-host
// machines, and multi-host clusters of small boxes.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "topology/topo_file.h"

namespace loom::topo::testing {

/// Path of a reference file under tests/data/topo.
inline std::string referenceFile(const std::string& name) {
  return std::string(LOOM_TOPO_DATA_DIR) + "/" + name;
}

/// The DGX-1 (V100) of NVIDIA's white paper: two sockets, two PCIe switches
/// per socket with two GPUs each, and the hybrid cube-mesh of NVLink 2 (one or
/// two lanes of 25 GB/s per pair, six lanes per GPU).
inline Topology dgx1CubeMesh() {
  GraphBuilder b;
  const int host = b.host("dgx1");
  const int cpus[2] = {b.cpu(host, "cpu0", 0), b.cpu(host, "cpu1", 1)};
  b.link(cpus[0], cpus[1], LinkKind::Smp, 38.4, 0.2);
  std::vector<int> gpus;
  for (int s = 0; s < 4; ++s) {
    const int sw = b.node(NodeKind::PciSwitch, host, "pci" + std::to_string(s));
    b.link(cpus[s / 2], sw, LinkKind::Pcie, 15.76, 0.5, 16);
    for (int g = 0; g < 2; ++g) {
      gpus.push_back(b.node(NodeKind::Gpu, host, "gpu" + std::to_string(2 * s + g)));
      b.link(sw, gpus.back(), LinkKind::Pcie, 15.76, 0.5, 16);
    }
  }
  const int lanes[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                          {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                          {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (const auto& l : lanes) {
    b.link(gpus[l[0]], gpus[l[1]], LinkKind::NvLink, 25.0 * l[2], 0.3, l[2]);
  }
  return b.take();
}

/// One host with `ngpus` GPUs spread over two sockets and PCIe switches, and
/// NVLinks of random lanes between random pairs.
inline Topology randomHost(int ngpus, unsigned seed) {
  std::mt19937 rng(seed);
  GraphBuilder b;
  const int host = b.host("h");
  const int cpus[2] = {b.cpu(host, "cpu0", 0), b.cpu(host, "cpu1", 1)};
  b.link(cpus[0], cpus[1], LinkKind::Smp, 20.0 + rng() % 40, 0.2);
  const int switches = 1 + static_cast<int>(rng() % 4);
  std::vector<int> sws;
  for (int s = 0; s < switches; ++s) {
    sws.push_back(b.node(NodeKind::PciSwitch, host, "pci" + std::to_string(s)));
    b.link(cpus[s % 2], sws.back(), LinkKind::Pcie, 16.0, 0.5, 16);
  }
  std::vector<int> gpus;
  for (int g = 0; g < ngpus; ++g) {
    gpus.push_back(b.node(NodeKind::Gpu, host, "gpu" + std::to_string(g)));
    b.link(sws[rng() % sws.size()], gpus.back(), LinkKind::Pcie, 8.0 + rng() % 9, 0.5, 16);
  }
  for (int a = 0; a < ngpus; ++a) {
    for (int c = a + 1; c < ngpus; ++c) {
      if (rng() % 3 != 0) continue;
      const int lanes = 1 + static_cast<int>(rng() % 3);
      b.link(gpus[a], gpus[c], LinkKind::NvLink, 25.0 * lanes, 0.3, lanes);
    }
  }
  return b.take();
}

/// `hosts` boxes of `gpusPerHost` GPUs on NVLink rings (2 lanes), one PCIe
/// switch per GPU pair with a NIC on it, all NICs on one fabric.
inline Topology smallCluster(int hosts, int gpusPerHost, double nicGBps = 25.0) {
  GraphBuilder b;
  const int fabric = b.fabric("fabric");
  for (int h = 0; h < hosts; ++h) {
    const std::string name = "h" + std::to_string(h);
    const int host = b.host(name);
    const int cpu = b.cpu(host, name + "/cpu0");
    std::vector<int> gpus;
    int sw = -1;
    for (int g = 0; g < gpusPerHost; ++g) {
      if (g % 2 == 0) {
        sw = b.node(NodeKind::PciSwitch, host, name + "/pci" + std::to_string(g / 2));
        b.link(cpu, sw, LinkKind::Pcie, 32.0, 0.5, 16);
        const int nic = b.node(NodeKind::Nic, host, name + "/nic" + std::to_string(g / 2));
        b.link(sw, nic, LinkKind::Pcie, 32.0, 0.5, 16);
        b.link(nic, fabric, LinkKind::Net, nicGBps, 2.0);
      }
      gpus.push_back(b.node(NodeKind::Gpu, host, name + "/gpu" + std::to_string(g)));
      b.link(sw, gpus.back(), LinkKind::Pcie, 32.0, 0.5, 16);
    }
    for (int g = 0; g + 1 < gpusPerHost; ++g) {
      b.link(gpus[g], gpus[g + 1], LinkKind::NvLink, 50.0, 0.3, 2);
    }
    if (gpusPerHost > 2) b.link(gpus.back(), gpus.front(), LinkKind::NvLink, 50.0, 0.3, 2);
  }
  return b.take();
}

}  // namespace loom::topo::testing
