// The work requests that move one message, as plain data built by pure
// functions, so every field can be checked without a NIC.
//
// A message is RDMA-written straight into the peer's receive slot. All chunks
// but the last are RDMA_WRITE; the last is RDMA_WRITE_WITH_IMM, whose
// immediate consumes a receive request at the peer and raises a completion
// there after every earlier write on the connection has landed (RC delivers
// in order), so one completion per message tells the receiver it is whole.
// Only the last request is signaled: the sender needs one completion per
// message to know its send slot is free again, and RC completes in order.
//
// Immediate data, 32 bits (big-endian on the wire, as verbs requires):
//   data message: bit 31 = 0, bits 24..30 = sequence mod 128, bits 0..23 = length
//   credit:       bit 31 = 1, bits 0..30 = messages released so far, mod 2^31
// The length is there because the receiver must check it against the plan
// (Link::tryRecv) and a completion only reports the last chunk's length. The
// slot is not: it is the sequence modulo the slot count, and the 7 sequence
// bits catch a stream that got out of step. A credit is cumulative, so a
// later credit covers a lost or coalesced earlier one.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom {

/// Largest message: its length must fit the immediate's 24 bits.
inline constexpr size_t kIbvMaxMessageBytes = (size_t{1} << 24) - 1;

struct IbvImmediate {
  enum class Kind { Data, Credit };
  Kind kind = Kind::Data;
  uint32_t sequence = 0;  ///< Data: message sequence mod 128
  uint32_t length = 0;    ///< Data: bytes
  uint32_t released = 0;  ///< Credit: messages released, mod 2^31
};

/// Host-order immediate of a data message.
uint32_t encodeDataImmediate(uint64_t sequence, size_t length);
/// Host-order immediate of a credit.
uint32_t encodeCreditImmediate(uint64_t released);
/// Decodes a host-order immediate (ntohl of ibv_wc::imm_data).
IbvImmediate decodeImmediate(uint32_t immediate);

/// What completions are about, in the top byte of wr_id.
enum class IbvWrKind : uint8_t { Data = 1, Credit = 2, Recv = 3 };
inline uint64_t makeWrId(IbvWrKind kind, uint64_t sequence) {
  return (uint64_t{static_cast<uint8_t>(kind)} << 56) | (sequence & ((uint64_t{1} << 56) - 1));
}
inline IbvWrKind wrKind(uint64_t wrId) { return static_cast<IbvWrKind>(wrId >> 56); }

struct IbvMessageWrite {
  uint64_t localAddr = 0;  ///< the message in the local send slot
  uint32_t lkey = 0;
  size_t bytes = 0;         ///< <= kIbvMaxMessageBytes; 0 is one empty write carrying the immediate
  uint64_t remoteAddr = 0;  ///< the peer's receive slot
  uint32_t rkey = 0;
  size_t maxBytesPerWr = 0;  ///< > 0
  uint64_t sequence = 0;
};

/// Scatter entries and work requests of one message; wrs[i].next points at
/// wrs[i + 1] and wrs[i].sg_list at sges[i], so it moves but never copies.
struct IbvWriteChain {
  std::vector<ibv_sge> sges;
  std::vector<ibv_send_wr> wrs;

  IbvWriteChain() = default;
  IbvWriteChain(IbvWriteChain&&) = default;
  IbvWriteChain& operator=(IbvWriteChain&&) = default;
  IbvWriteChain(const IbvWriteChain&) = delete;
  IbvWriteChain& operator=(const IbvWriteChain&) = delete;

  ibv_send_wr* head() { return wrs.empty() ? nullptr : wrs.data(); }
};

/// Work requests a message of `bytes` takes (empty messages take one).
size_t ibvWritesPerMessage(size_t bytes, size_t maxBytesPerWr);
/// Fills `chain` (reusing its capacity) with the writes of one message.
/// Throws InvalidArgument if bytes exceeds kIbvMaxMessageBytes or maxBytesPerWr is 0.
void buildMessageWrites(const IbvMessageWrite& message, IbvWriteChain& chain);

/// An empty, signaled RDMA_WRITE_WITH_IMM carrying a credit. It writes no
/// bytes; the address and key only have to be the peer's ring.
ibv_send_wr buildCreditWrite(uint64_t remoteAddr, uint32_t rkey, uint64_t released);
/// A receive request without buffers: RDMA_WRITE_WITH_IMM needs one to
/// deliver its immediate, and the data itself lands by rkey.
ibv_recv_wr buildImmediateRecv();

}  // namespace loom
