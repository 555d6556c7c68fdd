#include "comm/network_links.h"

#include <string>

#include "comm/comm.h"
#include "core/log.h"
#if LOOM_HAVE_UCX
#include "transports/ucx/ucx_transport.h"
#endif
#if LOOM_HAVE_IBVERBS
#include "transports/ibverbs/ibv_devices.h"
#include "transports/ibverbs/ibv_transport.h"
#endif

namespace loom {
namespace {

/// What a transport's connect*Links needs of this communicator.
ConnectRequest connectRequest(const Comm& comm, const std::vector<int>& peers,
                              std::vector<std::string> addresses, Deadline deadline) {
  return {comm.rank, peers,        std::move(addresses), linkCredentials(comm.id),
          deadline,  &comm.aborted};
}

/// Every rank says whether it can; all must, or none uses it.
bool everyRankCan(Comm& comm, bool mine, std::string_view what, bool required, Deadline deadline) {
  const auto answers = comm.bootstrap->allGather(mine ? "1" : "0", deadline);
  std::string missing;
  for (size_t r = 0; r < answers.size(); ++r) {
    if (answers[r] != "1") missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  if (missing.empty()) return true;
  if (required) {
    raise(ErrorCode::InvalidUsage,
          "LOOM_NET={}: rank(s) {} cannot use it (rank {} {}): unset "
          "LOOM_NET or use tcp",
          what, missing, comm.rank, mine ? "can" : "cannot");
  }
  return false;
}

#if LOOM_HAVE_UCX
std::vector<std::unique_ptr<Link>> ucxLinks(Comm& comm, const std::vector<int>& peers,
                                            Deadline deadline) {
  comm.ucxWorker = std::make_unique<UcxWorker>();
  const auto addresses = comm.bootstrap->allGather(comm.ucxWorker->address(), deadline);
  UcxConfig config;
  config.slotBytes = comm.config.tcp.slotBytes;
  config.slots = comm.config.tcp.slots;
  config.channels = comm.networkChannels;
  return connectUcxLinks(*comm.ucxWorker, connectRequest(comm, peers, addresses, deadline), config);
}
#endif

#if LOOM_HAVE_IBVERBS
std::vector<std::unique_ptr<Link>> ibvLinks(Comm& comm, const std::vector<int>& peers,
                                            Deadline deadline) {
  IbvConfig config;
  config.slotBytes = comm.config.tcp.slotBytes;
  config.slots = comm.config.tcp.slots;
  const IbvExchange exchange = [&](const std::string& mine) {
    return comm.bootstrap->allGather(mine, deadline);
  };
  // A queue pair fills its port alone: more channels only when asked for.
  if (!comm.config.channels) comm.networkChannels = 1;
  std::vector<std::unique_ptr<Link>> links;
  for (int channel = 0; channel < comm.networkChannels; ++channel) {
    // Each set is collective (its exchange is an all-gather), so ranks build them in step.
    for (auto& link : connectIbvLinks(comm.rank, peers, comm.id.tag(), config, exchange, deadline,
                                      &comm.aborted)) {
      links.push_back(std::move(link));
    }
  }
  return links;
}

bool hasActiveRdmaPort() {
  try {
    chooseIbvPort(listIbvDevices(), "", 0);
    return true;
  } catch (const Error&) {
    return false;
  }
}
#endif

using ConnectLinks = std::vector<std::unique_ptr<Link>> (*)(Comm&, const std::vector<int>&,
                                                            Deadline);

/// A network transport this libloom was built with.
struct NetworkTransport {
  NetChoice choice;
  const char* name;
  /// Whether this process can use it (nullptr: always). Every rank must be
  /// able to, so it is agreed on (an all-gather) before connecting.
  bool (*usableHere)();
  /// Whether LOOM_NET=auto tries it (in table order; tcp last, always usable).
  bool automatic;
  ConnectLinks connect;
};

/// The one place that knows which transports are built.
constexpr NetworkTransport kNetworkTransports[] = {
#if LOOM_HAVE_IBVERBS
    {NetChoice::Ib, "ibverbs", hasActiveRdmaPort, true, ibvLinks},
#endif
#if LOOM_HAVE_UCX
    {NetChoice::Ucx, "ucx", nullptr, false, ucxLinks},
#endif
    {NetChoice::Tcp, "tcp", nullptr, true, connectTcpPeers},
};

std::vector<std::unique_ptr<Link>> connectOver(const NetworkTransport& transport, Comm& comm,
                                               const std::vector<int>& peers, Deadline deadline,
                                               const char* why) {
  LOOM_INFO("rank {}: links to other hosts over {}{}", comm.rank, transport.name, why);
  return transport.connect(comm, peers, deadline);
}

}  // namespace

std::vector<std::unique_ptr<Link>> connectTcpPeers(Comm& comm, const std::vector<int>& peers,
                                                   Deadline deadline) {
  std::vector<std::string> addresses;
  for (const auto& p : comm.peers) addresses.push_back(p.tcpAddress);
  TcpConfig config = comm.config.tcp;
  config.channels = comm.networkChannels;
  return connectTcpLinks(*comm.tcpListener,
                         connectRequest(comm, peers, std::move(addresses), deadline), config);
}

std::vector<std::unique_ptr<Link>> connectNetworkLinks(Comm& comm,
                                                       const std::vector<int>& remotePeers,
                                                       Deadline deadline) {
  const NetChoice net = comm.config.net;
  if (net != NetChoice::Auto) {
    for (const NetworkTransport& transport : kNetworkTransports) {
      if (transport.choice != net) continue;
      if (transport.usableHere != nullptr) {
        everyRankCan(comm, transport.usableHere(), netName(net), true, deadline);
      }
      return connectOver(transport, comm, remotePeers, deadline, " (LOOM_NET)");
    }
    raise(ErrorCode::InvalidUsage, "LOOM_NET={}: this libloom was built without it", netName(net));
  }
  // The first transport every rank can use; tcp, last, always can.
  for (const NetworkTransport& transport : kNetworkTransports) {
    if (!transport.automatic) continue;
    if (transport.usableHere == nullptr ||
        everyRankCan(comm, transport.usableHere(), transport.name, false, deadline)) {
      return connectOver(transport, comm, remotePeers, deadline, "");
    }
  }
  raise(ErrorCode::InternalError, "no network transport is built");
}

}  // namespace loom
