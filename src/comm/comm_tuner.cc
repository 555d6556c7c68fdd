#include "comm/comm_tuner.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "comm/comm.h"
#include "core/log.h"
#include "tuner/network_channels.h"
#include "tuner/tuner.h"

namespace loom {
namespace {

constexpr double kAssumedNicGbps = 10.0;
// One-way software latency of a tcp message between hosts; what the shm path
// pays is the tuner's own per-message default.
constexpr double kTcpLatencyMicros = 20.0;

std::string hostPart(const std::string& address) {
  if (!address.empty() && address.front() == '[') return address.substr(1, address.find(']') - 1);
  return address.substr(0, address.rfind(':'));
}

}  // namespace

double interfaceBandwidth(const std::string& address) {
  const std::string ip = hostPart(address);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return topo::netBandwidthFromGbps(kAssumedNicGbps);
  std::string name;
  for (ifaddrs* a = list; a != nullptr && name.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const int family = a->ifa_addr->sa_family;
    const void* raw =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
        : family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr)
            : nullptr;
    if (raw != nullptr && inet_ntop(family, raw, text, sizeof(text)) != nullptr && ip == text) {
      name = a->ifa_name;
    }
  }
  freeifaddrs(list);
  long mbps = 0;
  if (!name.empty()) {
    std::ifstream in("/sys/class/net/" + name + "/speed");
    in >> mbps;
  }
  // Virtual interfaces report -1 or nothing; assume a common NIC then.
  const double gbps = mbps > 0 ? static_cast<double>(mbps) / 1000.0 : kAssumedNicGbps;
  return topo::netBandwidthFromGbps(gbps);
}

topo::Topology communicatorTopology(const std::vector<int>& hostOfRank, double nicGBps,
                                    std::vector<int>* rankNodes) {
  topo::Topology t;
  t.source = "communicator (hosts from peer info, network from the tcp interface)";
  topo::Node fabric;
  fabric.kind = topo::NodeKind::Fabric;
  fabric.id = "net";
  const int net = t.addNode(fabric);
  std::map<int, int> cpuOfHost;
  for (int host : hostOfRank) {
    if (cpuOfHost.count(host) != 0) continue;
    topo::Node h;
    h.kind = topo::NodeKind::Host;
    h.id = fmt::format("host{}", host);
    const int hostIndex = t.addNode(h);
    topo::Node cpu;
    cpu.kind = topo::NodeKind::Cpu;
    cpu.id = h.id + "/cpu0";
    cpu.host = hostIndex;
    cpu.numa = 0;
    cpu.cores = 1;
    const int cpuIndex = t.addNode(cpu);
    topo::Node nic;
    nic.kind = topo::NodeKind::Nic;
    nic.id = h.id + "/nic0";
    nic.host = hostIndex;
    const int nicIndex = t.addNode(nic);
    t.addLink({cpuIndex, hostIndex, topo::LinkKind::Host, 0.0, 0.0, 1, 0, {}});
    t.addLink(
        {cpuIndex, nicIndex, topo::LinkKind::Pcie, topo::pcieBandwidth(3, 16), 0.5, 16, 3, {}});
    t.addLink({nicIndex, net, topo::LinkKind::Net, nicGBps, kTcpLatencyMicros, 1, 0, {}});
    cpuOfHost[host] = cpuIndex;
  }
  rankNodes->clear();
  for (int host : hostOfRank) rankNodes->push_back(cpuOfHost[host]);
  topo::validateTopology(t);
  return t;
}

void setUpTuner(Comm& comm) {
  const std::vector<int> hostOfRank = hostNumbers(comm.peers);
  // Hosts are numbered from 0 in order of appearance.
  const int hosts =
      hostOfRank.empty() ? 0 : *std::max_element(hostOfRank.begin(), hostOfRank.end()) + 1;
  // Every rank sees the same peer list, so all take this branch together.
  if (hosts < 2) return;
  std::vector<int> rankNodes;
  const double nic = interfaceBandwidth(comm.peers[comm.rank].tcpAddress);
  // Hosts may differ in NIC speed, yet every rank must build the same model
  // (they must agree on every choice): they share their speeds and all use
  // the slowest.
  const auto speeds =
      comm.bootstrap->allGather(fmt::format("{}", nic), Deadline::after(comm.config.timeout));
  double slowest = nic;
  for (const std::string& s : speeds) slowest = std::min(slowest, std::stod(s));
  const topo::Topology topology = communicatorTopology(hostOfRank, slowest, &rankNodes);
  comm.tuner = std::make_unique<tuner::TunerTopology>(tuner::tunerTopologyFor(topology, rankNodes));
  comm.tuner->linkSlots = comm.config.tcp.slots;
  comm.tuner->networkGBps = slowest;
  comm.tuner->connectionGBps = tuner::kConnectionGBps;
  comm.ringOrder = comm.tuner->treeOrder;
  // The hierarchical all-reduce's local rings and the host tree's chains
  // follow the ring found inside each host.
  if (!comm.tuner->hostRanks.empty()) comm.hostGroups = comm.tuner->hostRanks;
  LOOM_INFO("rank {}: {} hosts, network {:.2f} GB/s; ring order {}", comm.rank, hosts, slowest,
            fmt::join(comm.ringOrder, " "));
}

}  // namespace loom
