// The attributes of each step of a reliable-connected QP's life
// (RESET -> INIT -> RTR -> RTS), as pure functions so that every field and
// mask bit is checked without a NIC. IbvLink passes them to ibv_modify_qp.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <vector>

#include "transports/ibverbs/ibv_connection.h"

namespace loom {

/// Path and retry settings; the defaults suit a fabric that loses nothing.
struct IbvQpOptions {
  uint8_t timeout = 20;      ///< local ACK timeout: 4.096 us * 2^timeout (20: ~4 s)
  uint8_t retryCount = 7;    ///< transport retries before the QP errors out
  uint8_t rnrRetry = 7;      ///< 7: retry forever when the peer has no receive posted
  uint8_t minRnrTimer = 12;  ///< 0.64 ms before a peer retries an RNR
  uint8_t serviceLevel = 0;
  uint8_t trafficClass = 0;  ///< RoCE: DSCP << 2
  uint8_t hopLimit = 255;    ///< RoCE: routed networks
};

/// What this side knows about its own port when it addresses the peer.
struct IbvLocalPort {
  uint8_t port = 1;
  IbvLinkLayer linkLayer = IbvLinkLayer::InfiniBand;
  uint8_t activeMtu = IBV_MTU_1024;  ///< enum ibv_mtu
  uint8_t gidIndex = 0;
};

struct IbvQpTransition {
  ibv_qp_attr attr{};
  int mask = 0;
};

/// RESET -> INIT: bound to the port; the peer may RDMA-write into our memory.
IbvQpTransition ibvQpToInit(uint8_t port);
/// INIT -> RTR: aimed at the peer's QP. The path MTU is the smaller of both
/// ports'. InfiniBand addresses the peer by LID; Ethernet (RoCE) has no LIDs
/// and always needs the global route header with the peer's GID.
IbvQpTransition ibvQpToRtr(const IbvLocalPort& local, const IbvConnection& remote,
                           const IbvQpOptions& options);
/// RTR -> RTS: our send PSN (the one we told the peer) and retry policy.
IbvQpTransition ibvQpToRts(uint32_t localPsn, const IbvQpOptions& options);

struct IbvGidCandidate {
  uint32_t index = 0;
  uint32_t type = IBV_GID_TYPE_IB;  ///< enum ibv_gid_type
  std::array<uint8_t, 16> gid{};
};
/// The GID index to use on an Ethernet port: RoCE v2 with an IPv4-mapped
/// address (routable, what RoCE fabrics are configured for), else any RoCE v2,
/// else the first non-zero entry; -1 if there is none.
int chooseRoceGidIndex(const std::vector<IbvGidCandidate>& table);

}  // namespace loom
