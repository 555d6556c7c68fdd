// The topology model: a graph of hosts, CPUs (one per NUMA node / socket),
// PCIe switches, GPUs, NICs, NVSwitches and network fabrics, joined by typed
// links with bandwidths. Detection, topology files, path classes, ring/tree
// search and the tuner all speak this one structure.
//
// Conventions every producer keeps (validateTopology checks them):
// - node ids are unique, non-empty strings ("host0", "host0/gpu3", ...);
// - every node except Host and Fabric belongs to exactly one host (`host` is the
//   index of a Host node); Host and Fabric nodes have host == -1, and so does
//   an NvSwitch shared by several hosts (an NVLink domain such as an NVL72
//   rack's switch trays);
// - a Cpu links to its host with LinkKind::Host (zero cost: it only says where
//   it lives); two Cpus of one host link with LinkKind::Smp;
// - PCIe links form a tree under each Cpu (Cpu - PciSwitch* - Gpu/Nic); a Gpu
//   may hang off its Cpu by LinkKind::NvLinkC2C instead (Grace's NVLink-C2C);
// - NVLink links join Gpus to Gpus or to NvSwitches; `lanes` counts the links
//   bonded between the pair and bandwidth is the total of those lanes. An
//   NVLink joins two hosts only through a shared (hostless) NvSwitch;
// - a Nic reaches other hosts through a Net link to a Fabric node.
// Bandwidths are GB/s in each direction; latencies microseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::topo {

enum class NodeKind : uint8_t { Host, Cpu, PciSwitch, Gpu, Nic, NvSwitch, Fabric };
enum class LinkKind : uint8_t { Host, Smp, Pcie, NvLink, Net, NvLinkC2C };

const char* nodeKindName(
    NodeKind kind);  ///< "host", "cpu", "pci", "gpu", "nic", "nvswitch", "fabric"
/// "host", "smp", "pcie", "nvlink", "net", "nvlink-c2c"
const char* linkKindName(LinkKind kind);
/// Inverses of the names above; nullopt for an unknown name.
std::optional<NodeKind> nodeKindFromName(std::string_view name);
std::optional<LinkKind> linkKindFromName(std::string_view name);

struct Node {
  NodeKind kind = NodeKind::Host;
  std::string id;     ///< unique, stable across save/load
  int host = -1;      ///< index of its Host node; -1 for Host, Fabric, a shared NvSwitch
  std::string name;   ///< human label: model ("H100 SXM"), device ("mlx5_0"), ifname
  std::string busId;  ///< PCI bus id "0000:1b:00.0" for Gpu/Nic/PciSwitch, else empty
  int numa = -1;      ///< Cpu: its NUMA node index; Gpu/Nic: NUMA affinity (-1 unknown)
  int cores = 0;      ///< Cpu: physical cores
  int rank = -1;      ///< Gpu: the communicator rank placed on it (-1: none/unknown)
};

struct Link {
  int a = -1;  ///< node index
  int b = -1;  ///< node index
  LinkKind kind = LinkKind::Pcie;
  double bandwidth = 0.0;  ///< GB/s per direction (all lanes together)
  double latency = 0.0;    ///< microseconds
  int lanes = 1;           ///< NvLink: bonded links; Pcie: width (x16 -> 16)
  int generation = 0;      ///< NvLink version or PCIe generation; 0 unknown
  /// Pcie link at a cpu: the host bridge (PCI root bus, "0000:16") whose tree
  /// it starts. Empty: a host bridge of its own. Two trees of one cpu with the
  /// same bridge make nvidia-smi's PHB; with different ones, NODE.
  std::string bridge;
};

struct Topology {
  std::string source;  ///< where it came from: "detected", a file path, a doc URL
  std::vector<Node> nodes;
  std::vector<Link> links;

  int addNode(Node node);  ///< returns its index
  int addLink(Link link);  ///< returns its index
  /// Index of the node with this id, or -1.
  int find(const std::string& id) const;
  /// Indices of nodes of one kind, in node order (GPU order = device order).
  std::vector<int> nodesOfKind(NodeKind kind) const;
  /// Indices of links touching `node`.
  std::vector<int> linksOf(int node) const;
  /// The node at the other end of `link` from `node`.
  int other(const Link& link, int node) const { return link.a == node ? link.b : link.a; }
};

/// NVLink islands: for every node, a number shared by the hosts whose GPUs
/// reach each other over NVLink through shared NvSwitches (one host alone is
/// an island of its own); -1 for nodes of no host. Inside an island GPUs talk
/// over NVLink, between islands over the network.
std::vector<int> nvlinkIslands(const Topology& topology);

/// Checks the conventions above. Throws Error(InvalidArgument) naming the node
/// or link (by id) and what is wrong. Runs in O(nodes + links).
void validateTopology(const Topology& topology);

/// One broken convention: the node or the link at fault (an index, -1 when the
/// problem is not about one) and a message naming it by id.
struct TopologyProblem {
  int node = -1;
  int link = -1;
  std::string message;
};

/// The first convention `topology` breaks, or nullopt. validateTopology throws
/// its message; the file loader maps `node`/`link` back to a line. O(nodes + links).
std::optional<TopologyProblem> findTopologyProblem(const Topology& topology);

/// Typical bandwidths, GB/s per direction, for producers that know only the
/// link's kind and version: PCIe gen×width, NVLink version×lanes, SMP, NIC Gb/s.
double pcieBandwidth(int generation, int width);
double nvlinkBandwidth(int version, int lanes);
double netBandwidthFromGbps(double gbps);
/// Between two sockets of one host (about two UPI/xGMI links), when unknown.
double typicalSmpBandwidth();
/// One hop's typical latency in microseconds, for producers that cannot measure it.
double typicalLatency(LinkKind kind);

}  // namespace loom::topo
