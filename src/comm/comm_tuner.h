// The communicator's view of its machine for the tuner: which ranks share a
// host (and so shared memory), and what joins the hosts (the network interface
// the tcp links use). Built once at init when the ranks span hosts; on one host
// the size rule's direct algorithm is what the model picks anyway.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "topology/graph.h"
#include "tuner/tuner_topology.h"

struct loomComm;  // comm/comm.h

namespace loom {

/// One host node per distinct host (in order of their lowest rank), a CPU per
/// host holding its ranks, a NIC per host of `nicGBps` on one fabric; hosts
/// are assumed alike. rankNodes[r] receives rank r's CPU node.
topo::Topology communicatorTopology(const std::vector<int>& hostOfRank, double nicGBps,
                                    std::vector<int>* rankNodes);

/// Speed of the network interface holding `address` ("ip:port"), GB/s, from
/// sysfs; 10 Gb/s when it cannot be read.
double interfaceBandwidth(const std::string& address);

/// Sets comm.tuner and comm.ringOrder when comm's ranks span hosts.
void setUpTuner(::loomComm& comm);

}  // namespace loom
