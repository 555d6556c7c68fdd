// Links to ranks on other hosts, over the network LOOM_NET names: tcp (always
// built), ucx (UCX, when built) or ib (native verbs, when built and every rank
// has an ACTIVE RDMA port). `auto` takes ib when every rank can, else tcp.
#pragma once

#include <memory>
#include <vector>

#include "bootstrap/unique_id.h"
#include "core/deadline.h"
#include "transports/link.h"
#include "transports/link_credentials.h"

struct loomComm;  // comm/comm.h

namespace loom {

/// What the transports' handshakes prove: the communicator's tag and link key.
inline LinkCredentials linkCredentials(const UniqueId& id) { return {id.tag(), id.linkKey()}; }

/// Connects tcp links to `peers` (on this host or others), comm.networkChannels
/// per peer, channel-major.
std::vector<std::unique_ptr<Link>> connectTcpPeers(::loomComm& comm, const std::vector<int>& peers,
                                                   Deadline deadline);

/// Connects links to `remotePeers` (ranks on other hosts). Collective: every
/// rank of the communicator calls it, with the same LOOM_NET (the config
/// signature guarantees that), even with no remote peers. Returns
/// comm.networkChannels links per peer, channel-major (link c * P + i is channel
/// c's link to remotePeers[i]); over ibverbs it lowers comm.networkChannels to
/// 1 unless LOOM_NCHANNELS asks for more. Throws InvalidUsage naming the ranks that cannot use
/// an explicitly requested network.
std::vector<std::unique_ptr<Link>> connectNetworkLinks(::loomComm& comm,
                                                       const std::vector<int>& remotePeers,
                                                       Deadline deadline);

}  // namespace loom
