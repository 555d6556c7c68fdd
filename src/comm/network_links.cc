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

std::vector<std::unique_ptr<Link>> tcpLinks(Comm& comm, const std::vector<int>& peers,
                                            Deadline deadline) {
  std::vector<std::string> addresses;
  for (const auto& p : comm.peers) addresses.push_back(p.tcpAddress);
  TcpConfig config = comm.config.tcp;
  config.channels = comm.networkChannels;
  return connectTcpLinks(*comm.tcpListener, comm.rank, peers, addresses, linkCredentials(comm.id),
                         config, deadline, &comm.aborted);
}

/// Every rank says whether it can; all must, or none uses it.
bool everyRankCan(Comm& comm, bool mine, const char* what, bool required, Deadline deadline) {
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
  LOOM_INFO("rank {}: links to other hosts over ucx", comm.rank);
  comm.ucxWorker = std::make_unique<UcxWorker>();
  const auto addresses = comm.bootstrap->allGather(comm.ucxWorker->address(), deadline);
  UcxConfig config;
  config.slotBytes = comm.config.tcp.slotBytes;
  config.slots = comm.config.tcp.slots;
  config.channels = comm.networkChannels;
  return connectUcxLinks(*comm.ucxWorker, comm.rank, peers, addresses, linkCredentials(comm.id),
                         config, deadline, &comm.aborted);
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

}  // namespace

std::vector<std::unique_ptr<Link>> connectNetworkLinks(Comm& comm,
                                                       const std::vector<int>& remotePeers,
                                                       Deadline deadline) {
  const NetChoice net = comm.config.net;
  if (net == NetChoice::Tcp) {
    LOOM_INFO("rank {}: links to other hosts over tcp (LOOM_NET=tcp)", comm.rank);
    return tcpLinks(comm, remotePeers, deadline);
  }
  if (net == NetChoice::Ucx) {
#if LOOM_HAVE_UCX
    return ucxLinks(comm, remotePeers, deadline);
#else
    raise(ErrorCode::InvalidUsage, "LOOM_NET=ucx: this libloom was built without UCX");
#endif
  }
  // ib, or auto: native verbs when every rank has an ACTIVE port.
#if LOOM_HAVE_IBVERBS
  const bool mine = hasActiveRdmaPort();
#else
  const bool mine = false;
#endif
  const bool required = net == NetChoice::Ib;
  if (everyRankCan(comm, mine, "ib", required, deadline)) {
#if LOOM_HAVE_IBVERBS
    LOOM_INFO("rank {}: links to other hosts over ibverbs", comm.rank);
    return ibvLinks(comm, remotePeers, deadline);
#endif
  }
  LOOM_INFO("rank {}: links to other hosts over tcp{}", comm.rank,
            mine ? " (some ranks have no RDMA port)" : " (no RDMA port here)");
  return tcpLinks(comm, remotePeers, deadline);
}

}  // namespace loom
