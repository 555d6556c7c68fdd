#if LOOM_HAVE_IBVERBS
#include <gtest/gtest.h>

#include <cstring>

#include "transports/ibverbs/ibv_qp_setup.h"

namespace loom {
namespace {

IbvConnection remotePeer(IbvLinkLayer layer) {
  IbvConnection c;
  c.qpNum = 0x1234;
  c.psn = 0xabcde;
  c.lid = 77;
  for (size_t i = 0; i < 16; ++i) c.gid[i] = static_cast<uint8_t>(i + 1);
  c.mtu = IBV_MTU_4096;
  c.linkLayer = layer;
  return c;
}

TEST(IbvQpSetup, ResetToInit) {
  const IbvQpTransition t = ibvQpToInit(2);
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(t.attr.port_num, 2);
  EXPECT_EQ(t.attr.pkey_index, 0);
  EXPECT_EQ(t.attr.qp_access_flags, unsigned{IBV_ACCESS_REMOTE_WRITE});
  EXPECT_EQ(t.mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

TEST(IbvQpSetup, InitToRtrOnInfiniBandUsesTheLid) {
  IbvLocalPort local{1, IbvLinkLayer::InfiniBand, IBV_MTU_2048, 0};
  IbvQpOptions options;
  options.serviceLevel = 3;
  options.minRnrTimer = 9;
  const IbvQpTransition t = ibvQpToRtr(local, remotePeer(IbvLinkLayer::InfiniBand), options);
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(t.attr.path_mtu, IBV_MTU_2048);  // the smaller of both ports
  EXPECT_EQ(t.attr.dest_qp_num, 0x1234u);
  EXPECT_EQ(t.attr.rq_psn, 0xabcdeu);
  EXPECT_EQ(t.attr.max_dest_rd_atomic, 1);
  EXPECT_EQ(t.attr.min_rnr_timer, 9);
  EXPECT_EQ(t.attr.ah_attr.is_global, 0);
  EXPECT_EQ(t.attr.ah_attr.dlid, 77);
  EXPECT_EQ(t.attr.ah_attr.sl, 3);
  EXPECT_EQ(t.attr.ah_attr.src_path_bits, 0);
  EXPECT_EQ(t.attr.ah_attr.port_num, 1);
  EXPECT_EQ(t.mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

TEST(IbvQpSetup, InitToRtrOnRoceUsesTheGlobalRoute) {
  IbvLocalPort local{2, IbvLinkLayer::Ethernet, IBV_MTU_4096, 3};
  IbvQpOptions options;
  options.trafficClass = 106;
  options.hopLimit = 64;
  IbvConnection remote = remotePeer(IbvLinkLayer::Ethernet);
  remote.mtu = IBV_MTU_1024;
  const IbvQpTransition t = ibvQpToRtr(local, remote, options);
  EXPECT_EQ(t.attr.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(t.attr.ah_attr.is_global, 1);
  EXPECT_EQ(t.attr.ah_attr.dlid, 0);
  EXPECT_EQ(std::memcmp(t.attr.ah_attr.grh.dgid.raw, remote.gid.data(), 16), 0);
  EXPECT_EQ(t.attr.ah_attr.grh.sgid_index, 3);
  EXPECT_EQ(t.attr.ah_attr.grh.hop_limit, 64);
  EXPECT_EQ(t.attr.ah_attr.grh.traffic_class, 106);
  EXPECT_EQ(t.attr.ah_attr.grh.flow_label, 0u);
  EXPECT_EQ(t.attr.ah_attr.port_num, 2);
  EXPECT_NE(t.mask & IBV_QP_AV, 0);
}

TEST(IbvQpSetup, RtrToRts) {
  IbvQpOptions options;
  options.timeout = 14;
  options.retryCount = 6;
  options.rnrRetry = 5;
  const IbvQpTransition t = ibvQpToRts(0xfedcba, options);
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(t.attr.sq_psn, 0xfedcbau);
  EXPECT_EQ(t.attr.timeout, 14);
  EXPECT_EQ(t.attr.retry_cnt, 6);
  EXPECT_EQ(t.attr.rnr_retry, 5);
  EXPECT_EQ(t.attr.max_rd_atomic, 1);
  EXPECT_EQ(t.mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

TEST(IbvQpSetup, DefaultOptions) {
  const IbvQpOptions options;
  EXPECT_EQ(options.retryCount, 7);
  EXPECT_EQ(options.rnrRetry, 7);  // "infinite": a receive is always posted anyway
  EXPECT_LE(options.timeout, 31);
}

IbvGidCandidate gid(uint32_t index, uint32_t type, std::array<uint8_t, 16> raw) {
  return {index, type, raw};
}

TEST(IbvQpSetup, ChoosesARoutableRoceGid) {
  const std::array<uint8_t, 16> linkLocal{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  const std::array<uint8_t, 16> ipv4{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7};
  const std::array<uint8_t, 16> zero{};
  // The usual table: v1 and v2 of the link-local address, then v1 and v2 of the IPv4 one.
  EXPECT_EQ(chooseRoceGidIndex(
                {gid(0, IBV_GID_TYPE_ROCE_V1, linkLocal), gid(1, IBV_GID_TYPE_ROCE_V2, linkLocal),
                 gid(2, IBV_GID_TYPE_ROCE_V1, ipv4), gid(3, IBV_GID_TYPE_ROCE_V2, ipv4)}),
            3);
  EXPECT_EQ(chooseRoceGidIndex(
                {gid(0, IBV_GID_TYPE_ROCE_V1, linkLocal), gid(1, IBV_GID_TYPE_ROCE_V2, linkLocal)}),
            1);
  EXPECT_EQ(chooseRoceGidIndex(
                {gid(0, IBV_GID_TYPE_ROCE_V2, zero), gid(4, IBV_GID_TYPE_ROCE_V1, linkLocal)}),
            4);
  EXPECT_EQ(chooseRoceGidIndex({gid(0, IBV_GID_TYPE_ROCE_V2, zero)}), -1);
  EXPECT_EQ(chooseRoceGidIndex({}), -1);
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
