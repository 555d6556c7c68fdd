#include "transports/ibverbs/ibv_qp_setup.h"

#include <algorithm>
#include <cstring>

namespace loom {
namespace {

bool isZero(const std::array<uint8_t, 16>& gid) {
  return std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; });
}

// ::ffff:a.b.c.d
bool isIpv4Mapped(const std::array<uint8_t, 16>& gid) {
  return std::all_of(gid.begin(), gid.begin() + 10, [](uint8_t b) { return b == 0; }) &&
         gid[10] == 0xff && gid[11] == 0xff;
}

}  // namespace

IbvQpTransition ibvQpToInit(uint8_t port) {
  IbvQpTransition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;
  t.attr.port_num = port;
  t.attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

IbvQpTransition ibvQpToRtr(const IbvLocalPort& local, const IbvConnection& remote,
                           const IbvQpOptions& options) {
  IbvQpTransition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = static_cast<ibv_mtu>(std::min(local.activeMtu, remote.mtu));
  t.attr.dest_qp_num = remote.qpNum;
  t.attr.rq_psn = remote.psn;
  // Unused (the peer issues no RDMA reads or atomics); 1 is what common tools set.
  t.attr.max_dest_rd_atomic = 1;
  t.attr.min_rnr_timer = options.minRnrTimer;
  ibv_ah_attr& ah = t.attr.ah_attr;
  ah.sl = options.serviceLevel;
  ah.src_path_bits = 0;
  ah.port_num = local.port;
  if (local.linkLayer == IbvLinkLayer::Ethernet) {
    ah.is_global = 1;
    ah.dlid = 0;
    std::memcpy(ah.grh.dgid.raw, remote.gid.data(), remote.gid.size());
    ah.grh.sgid_index = local.gidIndex;
    ah.grh.hop_limit = options.hopLimit;
    ah.grh.traffic_class = options.trafficClass;
    ah.grh.flow_label = 0;
  } else {
    ah.is_global = 0;
    ah.dlid = remote.lid;
  }
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  return t;
}

IbvQpTransition ibvQpToRts(uint32_t localPsn, const IbvQpOptions& options) {
  IbvQpTransition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.sq_psn = localPsn;
  t.attr.timeout = options.timeout;
  t.attr.retry_cnt = options.retryCount;
  t.attr.rnr_retry = options.rnrRetry;
  t.attr.max_rd_atomic = 1;
  t.mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

int chooseRoceGidIndex(const std::vector<IbvGidCandidate>& table) {
  auto pick = [&](auto&& good) -> int {
    for (const IbvGidCandidate& c : table) {
      if (!isZero(c.gid) && good(c)) return static_cast<int>(c.index);
    }
    return -1;
  };
  int index = pick([](const IbvGidCandidate& c) {
    return c.type == IBV_GID_TYPE_ROCE_V2 && isIpv4Mapped(c.gid);
  });
  if (index < 0)
    index = pick([](const IbvGidCandidate& c) { return c.type == IBV_GID_TYPE_ROCE_V2; });
  if (index < 0) index = pick([](const IbvGidCandidate&) { return true; });
  return index;
}

}  // namespace loom
