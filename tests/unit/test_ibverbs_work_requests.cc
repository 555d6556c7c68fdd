#if LOOM_HAVE_IBVERBS
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "transports/ibverbs/ibv_work_requests.h"

namespace loom {
namespace {

IbvMessageWrite message(size_t bytes, size_t maxBytesPerWr, uint64_t sequence = 5) {
  IbvMessageWrite m;
  m.localAddr = 0x100000;
  m.lkey = 0x11;
  m.bytes = bytes;
  m.remoteAddr = 0x7000000;
  m.rkey = 0x22;
  m.maxBytesPerWr = maxBytesPerWr;
  m.sequence = sequence;
  return m;
}

// Checks the whole chain against the message: addresses advance together,
// lengths sum to the message, only the last carries the immediate and a signal.
void expectChain(const IbvMessageWrite& m, IbvWriteChain& chain, size_t expectedWrs) {
  ASSERT_EQ(chain.wrs.size(), expectedWrs);
  ASSERT_EQ(chain.head(), &chain.wrs[0]);
  size_t total = 0;
  for (size_t i = 0; i < chain.wrs.size(); ++i) {
    const ibv_send_wr& wr = chain.wrs[i];
    const bool last = i + 1 == chain.wrs.size();
    SCOPED_TRACE("work request " + std::to_string(i));
    EXPECT_EQ(wr.next, last ? nullptr : &chain.wrs[i + 1]);
    EXPECT_EQ(wr.opcode, last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE);
    EXPECT_EQ(wr.send_flags, last ? unsigned{IBV_SEND_SIGNALED} : 0u);
    EXPECT_EQ(wrKind(wr.wr_id), IbvWrKind::Data);
    EXPECT_EQ(wr.wr.rdma.rkey, m.rkey);
    EXPECT_EQ(wr.wr.rdma.remote_addr, m.remoteAddr + total);
    if (m.bytes == 0) {
      EXPECT_EQ(wr.num_sge, 0);
      EXPECT_EQ(wr.sg_list, nullptr);
    } else {
      ASSERT_EQ(wr.num_sge, 1);
      ASSERT_EQ(wr.sg_list, &chain.sges[i]);
      EXPECT_EQ(wr.sg_list->addr, m.localAddr + total);
      EXPECT_EQ(wr.sg_list->lkey, m.lkey);
      EXPECT_GT(wr.sg_list->length, 0u);
      EXPECT_LE(wr.sg_list->length, m.maxBytesPerWr);
      if (!last) {
        EXPECT_EQ(wr.sg_list->length, m.maxBytesPerWr);
      }
      total += wr.sg_list->length;
    }
    if (last) {
      const IbvImmediate imm = decodeImmediate(ntohl(wr.imm_data));
      EXPECT_EQ(imm.kind, IbvImmediate::Kind::Data);
      EXPECT_EQ(imm.sequence, m.sequence % 128);
      EXPECT_EQ(imm.length, m.bytes);
    }
  }
  EXPECT_EQ(total, m.bytes);
}

TEST(IbvWorkRequests, OneWriteWhenTheMessageFits) {
  IbvWriteChain chain;
  const auto m = message(1000, 4096);
  buildMessageWrites(m, chain);
  expectChain(m, chain, 1);
}

TEST(IbvWorkRequests, LargeMessagesAreChained) {
  IbvWriteChain chain;
  for (size_t bytes : {size_t{8192}, size_t{8193}, size_t{4095 * 3 + 7}, size_t{1} << 20}) {
    SCOPED_TRACE(bytes);
    const auto m = message(bytes, 4096, bytes);
    buildMessageWrites(m, chain);  // reuses the same chain
    expectChain(m, chain, (bytes + 4095) / 4096);
  }
}

TEST(IbvWorkRequests, EmptyMessageIsOneWriteWithImmediate) {
  IbvWriteChain chain;
  const auto m = message(0, 4096, 130);
  buildMessageWrites(m, chain);
  expectChain(m, chain, 1);
  EXPECT_EQ(ibvWritesPerMessage(0, 1), 1u);
}

TEST(IbvWorkRequests, ChainSurvivesAMove) {
  IbvWriteChain chain;
  const auto m = message(10000, 4096);
  buildMessageWrites(m, chain);
  IbvWriteChain moved = std::move(chain);
  expectChain(m, moved, 3);
}

TEST(IbvWorkRequests, RefusesOversizedMessagesAndZeroChunks) {
  IbvWriteChain chain;
  EXPECT_THROW(buildMessageWrites(message(kIbvMaxMessageBytes + 1, 1 << 20), chain), Error);
  EXPECT_THROW(buildMessageWrites(message(10, 0), chain), Error);
  EXPECT_NO_THROW(buildMessageWrites(message(kIbvMaxMessageBytes, 1 << 30), chain));
  EXPECT_EQ(chain.wrs.size(), 1u);
}

TEST(IbvWorkRequests, WritesPerMessage) {
  EXPECT_EQ(ibvWritesPerMessage(1, 1), 1u);
  EXPECT_EQ(ibvWritesPerMessage(4096, 4096), 1u);
  EXPECT_EQ(ibvWritesPerMessage(4097, 4096), 2u);
  EXPECT_EQ(ibvWritesPerMessage(3 * 4096, 4096), 3u);
  EXPECT_THROW(ibvWritesPerMessage(1, 0), Error);
}

TEST(IbvWorkRequests, ImmediatesRoundTrip) {
  for (uint64_t sequence :
       {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{0xffffffffffff}}) {
    for (size_t length : {size_t{0}, size_t{1}, size_t{4096}, kIbvMaxMessageBytes}) {
      const IbvImmediate imm = decodeImmediate(encodeDataImmediate(sequence, length));
      EXPECT_EQ(imm.kind, IbvImmediate::Kind::Data);
      EXPECT_EQ(imm.sequence, sequence % 128);
      EXPECT_EQ(imm.length, length);
    }
  }
  for (uint64_t released : {uint64_t{0}, uint64_t{1}, uint64_t{0x7fffffff}, uint64_t{1} << 31,
                            (uint64_t{1} << 40) + 5}) {
    const IbvImmediate imm = decodeImmediate(encodeCreditImmediate(released));
    EXPECT_EQ(imm.kind, IbvImmediate::Kind::Credit);
    EXPECT_EQ(imm.released, released & 0x7fffffff);
  }
  // The documented layout, bit for bit.
  EXPECT_EQ(encodeDataImmediate(3, 0x123456), 0x03123456u);
  EXPECT_EQ(encodeDataImmediate(129, 7), 0x01000007u);
  EXPECT_EQ(encodeCreditImmediate(9), 0x80000009u);
  EXPECT_THROW(encodeDataImmediate(0, kIbvMaxMessageBytes + 1), Error);
}

TEST(IbvWorkRequests, CreditWriteAndReceive) {
  const ibv_send_wr credit = buildCreditWrite(0x5000, 0x77, 42);
  EXPECT_EQ(credit.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
  EXPECT_EQ(credit.send_flags, unsigned{IBV_SEND_SIGNALED});
  EXPECT_EQ(credit.num_sge, 0);
  EXPECT_EQ(credit.sg_list, nullptr);
  EXPECT_EQ(credit.next, nullptr);
  EXPECT_EQ(credit.wr.rdma.remote_addr, 0x5000u);
  EXPECT_EQ(credit.wr.rdma.rkey, 0x77u);
  EXPECT_EQ(wrKind(credit.wr_id), IbvWrKind::Credit);
  const IbvImmediate imm = decodeImmediate(ntohl(credit.imm_data));
  EXPECT_EQ(imm.kind, IbvImmediate::Kind::Credit);
  EXPECT_EQ(imm.released, 42u);

  const ibv_recv_wr recv = buildImmediateRecv();
  EXPECT_EQ(recv.num_sge, 0);
  EXPECT_EQ(recv.sg_list, nullptr);
  EXPECT_EQ(recv.next, nullptr);
  EXPECT_EQ(wrKind(recv.wr_id), IbvWrKind::Recv);
}

TEST(IbvWorkRequests, WrIdsKeepKindAndSequence) {
  const uint64_t id = makeWrId(IbvWrKind::Credit, 0x123456789);
  EXPECT_EQ(wrKind(id), IbvWrKind::Credit);
  EXPECT_EQ(id & 0xffffffffffff, 0x123456789u);
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
