#include "transports/ibverbs/ibv_work_requests.h"

#include <arpa/inet.h>

#include <algorithm>

#include "core/error.h"

namespace loom {
namespace {

constexpr uint32_t kCreditBit = 1u << 31;
constexpr uint32_t kLengthMask = (1u << 24) - 1;
constexpr uint32_t kSequenceMask = 0x7f;

}  // namespace

uint32_t encodeDataImmediate(uint64_t sequence, size_t length) {
  if (length > kIbvMaxMessageBytes) {
    raise(ErrorCode::InvalidArgument, "ibverbs: message of {} bytes exceeds the {} byte limit",
          length, kIbvMaxMessageBytes);
  }
  return ((static_cast<uint32_t>(sequence) & kSequenceMask) << 24) | static_cast<uint32_t>(length);
}

uint32_t encodeCreditImmediate(uint64_t released) {
  return kCreditBit | (static_cast<uint32_t>(released) & ~kCreditBit);
}

IbvImmediate decodeImmediate(uint32_t immediate) {
  IbvImmediate out;
  if ((immediate & kCreditBit) != 0) {
    out.kind = IbvImmediate::Kind::Credit;
    out.released = immediate & ~kCreditBit;
  } else {
    out.kind = IbvImmediate::Kind::Data;
    out.sequence = (immediate >> 24) & kSequenceMask;
    out.length = immediate & kLengthMask;
  }
  return out;
}

size_t ibvWritesPerMessage(size_t bytes, size_t maxBytesPerWr) {
  if (maxBytesPerWr == 0) {
    raise(ErrorCode::InvalidArgument, "ibverbs: maxBytesPerWr must be positive");
  }
  return bytes == 0 ? 1 : (bytes - 1) / maxBytesPerWr + 1;
}

void buildMessageWrites(const IbvMessageWrite& m, IbvWriteChain& chain) {
  const uint32_t immediate = encodeDataImmediate(m.sequence, m.bytes);
  const size_t count = ibvWritesPerMessage(m.bytes, m.maxBytesPerWr);
  chain.sges.assign(count, ibv_sge{});
  chain.wrs.assign(count, ibv_send_wr{});
  const uint64_t wrId = makeWrId(IbvWrKind::Data, m.sequence);
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t length = std::min(m.maxBytesPerWr, m.bytes - offset);
    ibv_send_wr& wr = chain.wrs[i];
    wr.wr_id = wrId;
    wr.wr.rdma.remote_addr = m.remoteAddr + offset;
    wr.wr.rdma.rkey = m.rkey;
    if (length > 0) {
      chain.sges[i] = {m.localAddr + offset, static_cast<uint32_t>(length), m.lkey};
      wr.sg_list = &chain.sges[i];
      wr.num_sge = 1;
    }
    const bool last = i + 1 == count;
    wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr.send_flags = last ? IBV_SEND_SIGNALED : 0;
    if (last) wr.imm_data = htonl(immediate);
    wr.next = last ? nullptr : &chain.wrs[i + 1];
    offset += length;
  }
}

ibv_send_wr buildCreditWrite(uint64_t remoteAddr, uint32_t rkey, uint64_t released) {
  ibv_send_wr wr{};
  wr.wr_id = makeWrId(IbvWrKind::Credit, released);
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(encodeCreditImmediate(released));
  wr.wr.rdma.remote_addr = remoteAddr;
  wr.wr.rdma.rkey = rkey;
  return wr;
}

ibv_recv_wr buildImmediateRecv() {
  ibv_recv_wr wr{};
  wr.wr_id = makeWrId(IbvWrKind::Recv, 0);
  return wr;
}

}  // namespace loom
