// Flow control of one IbvLink as plain counters: which message may be
// written, which slot is free, which credit to return. The link turns these
// answers into verbs calls; tests wire two rings together without a NIC.
//
// Each side owns a send ring and a receive ring of `slots` slots. Message m
// lives in slot m % slots on both sides. Its bytes are copied into the local
// send slot, RDMA-written into the peer's receive slot, and the send slot is
// reused once the write completed locally. The peer's receive slot may be
// written once the peer has released message m - slots, which it says with
// a credit: the cumulative count of messages it released.
//
// Send queue: data takes ibvWritesPerMessage() requests per message and at
// most one credit is in flight, so a queue of slots * writesPerMessage + 1
// requests never refuses a post, and credits coalesce while one is in flight.
// Receive queue: at most `slots` data messages (bounded by credits) and
// `slots` credits (one per window of our own messages) arrive unpolled, so
// 2 * slots posted receives always suffice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "transports/ibverbs/ibv_connection.h"
#include "transports/ibverbs/ibv_work_requests.h"

namespace loom {

class IbvRing {
 public:
  IbvRing(int peer, uint32_t slots, size_t slotBytes, size_t maxBytesPerWr);

  /// Send-queue and receive-queue depths the QP needs (see above).
  size_t sendQueueDepth() const { return sendQueueDepth_; }
  size_t recvQueueDepth() const { return 2 * size_t{slots_}; }
  uint32_t slots() const { return slots_; }
  size_t slotBytes() const { return slotBytes_; }
  size_t maxBytesPerWr() const { return maxBytesPerWr_; }

  // --- sending ---
  /// The local slot for the next message, or nullopt while all are in use.
  std::optional<uint32_t> sendSlot() const;
  /// The next message is in its slot. InternalError without a free slot.
  void commit(size_t bytes);

  struct Write {
    uint64_t sequence;
    uint32_t slot;
    size_t bytes;
  };
  /// The next committed message the peer has room for, if the send queue has room too.
  std::optional<Write> nextWrite() const;
  /// nextWrite()'s message was posted.
  void writePosted();
  /// The released count to send as a credit, when it changed and none is in flight.
  std::optional<uint64_t> nextCredit() const;
  void creditPosted(uint64_t released);
  /// A signaled send request completed (in posting order, as RC guarantees).
  void sendCompleted(IbvWrKind kind);
  /// Every committed message has been written into the peer's memory.
  bool drained() const { return sendDone_ == sendHead_; }

  // --- receiving ---
  /// A data immediate arrived. RemoteError if the peer broke the protocol.
  void dataArrived(const IbvImmediate& immediate);
  /// A credit immediate arrived. RemoteError if it releases unsent messages.
  void creditArrived(const IbvImmediate& immediate);
  /// The slot of the next message once it arrived; RemoteError if it does not
  /// have `bytes` bytes.
  std::optional<uint32_t> recvSlot(size_t bytes) const;
  /// The consumer is done with the message recvSlot returned.
  void release();

 private:
  struct InFlight {
    IbvWrKind kind;
    size_t requests;
  };

  int peer_;
  uint32_t slots_;
  size_t slotBytes_;
  size_t maxBytesPerWr_;
  size_t sendQueueDepth_;

  std::vector<size_t> sendLength_;
  uint64_t sendHead_ = 0;      // committed
  uint64_t sendPosted_ = 0;    // handed to the QP
  uint64_t sendDone_ = 0;      // completed locally: slot reusable
  uint64_t peerReleased_ = 0;  // the peer's receive slots we may refill
  std::deque<InFlight> inFlight_;
  size_t sendQueueUsed_ = 0;
  bool creditInFlight_ = false;

  std::vector<size_t> recvLength_;
  uint64_t recvArrived_ = 0;
  uint64_t recvReleased_ = 0;
  uint64_t creditSent_ = 0;  // released count carried by the last posted credit
};

}  // namespace loom
