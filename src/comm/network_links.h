// Links to ranks on other hosts, over the network LOOM_NET names: tcp (always
// built), ucx (UCX, when built) or ib (native verbs, when built and every rank
// has an ACTIVE RDMA port). `auto` takes ib when every rank can, else tcp.
#pragma once

#include <memory>
#include <vector>

#include "core/deadline.h"
#include "transports/link.h"

struct loomComm;  // comm/comm.h

namespace loom {

/// Connects links to `remotePeers` (ranks on other hosts). Collective: every
/// rank of the communicator calls it, with the same LOOM_NET (the config
/// signature guarantees that), even with no remote peers. Returns links in the
/// order of remotePeers. Throws InvalidUsage naming the ranks that cannot use
/// an explicitly requested network.
std::vector<std::unique_ptr<Link>> connectNetworkLinks(::loomComm& comm,
                                                       const std::vector<int>& remotePeers,
                                                       Deadline deadline);

}  // namespace loom
