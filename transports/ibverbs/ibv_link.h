// IbvLink: a Link over one reliable-connected queue pair.
//
// Each side has a send ring and a receive ring of `slots` x `slotBytes`,
// registered with the NIC. trySendSlot hands out the local send slot;
// commitSend RDMA-writes it into the peer's receive slot of the same index
// (ibv_work_requests.h), once the peer has credit for it. The receiver learns
// of a message from the immediate of its last write, and returns credit with
// an empty write whose immediate counts the messages it released
// (ibv_ring.h). Nothing else crosses the wire: no headers, no copies on the
// receive side, and the CPU is involved only to post and poll.
//
// Waiting: pollFd() is the completion channel of the link's completion
// queue; it becomes readable when a completion arrives, and progress()
// drains it and re-arms the notification, so wantsWrite() is always false.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

#include "transports/ibverbs/ibv_connection.h"
#include "transports/ibverbs/ibv_context.h"
#include "transports/ibverbs/ibv_memory.h"
#include "transports/ibverbs/ibv_ring.h"
#include "transports/ibverbs/ibv_transport.h"
#include "transports/ibverbs/ibv_work_requests.h"
#include "transports/link.h"

namespace loom {

class IbvLink final : public Link {
 public:
  /// Creates the queue pair (in INIT, receives posted) and the rings.
  IbvLink(int peer, std::shared_ptr<IbvContext> context, const IbvConfig& config);
  ~IbvLink() override;

  /// What the peer needs to connect to this link.
  IbvConnection localConnection(int myRank, uint64_t commTag) const;
  /// Moves the queue pair to RTS aimed at the peer's. The peer may write only
  /// once both sides are connected, so callers synchronise after this.
  void connect(const IbvConnection& remote);

  int peer() const override { return peer_; }
  const char* transportName() const override { return "ibverbs"; }
  size_t maxMessageBytes() const override { return ring_.slotBytes(); }

  void* trySendSlot(size_t bytes) override;
  void commitSend(size_t bytes) override;
  const void* tryRecv(size_t bytes) override;
  void releaseRecv() override;

  bool progress() override;
  bool sendsDrained() const override { return ring_.drained(); }
  int pollFd() const override;
  bool wantsWrite() const override { return false; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  struct ChannelDeleter {
    void operator()(ibv_comp_channel* c) const;
  };
  struct CqDeleter {
    void operator()(ibv_cq* cq) const;
  };
  struct QpDeleter {
    void operator()(ibv_qp* qp) const;
  };

  bool drainEvents();
  void handle(const ibv_wc& wc);
  void postPending();
  void postRecv();
  void modify(const IbvQpTransition& t, const char* step);
  [[noreturn]] void fail(const char* what, int err) const;
  uint8_t* sendSlot(uint32_t slot) const { return sendRing_.get() + size_t{slot} * slotBytes_; }
  uint8_t* recvSlot(uint32_t slot) const { return recvRing_.get() + size_t{slot} * slotBytes_; }

  // Declaration order is teardown order reversed: the queue pair goes first,
  // then its completion queue and channel, then the registrations, the rings
  // and, last, the context that owns the protection domain.
  std::shared_ptr<IbvContext> context_;
  int peer_;
  size_t slotBytes_;
  IbvQpOptions options_;
  IbvRing ring_;
  std::unique_ptr<uint8_t, FreeDeleter> sendRing_;
  std::unique_ptr<uint8_t, FreeDeleter> recvRing_;
  IbvMemoryLease sendLease_;
  IbvMemoryLease recvLease_;
  std::unique_ptr<ibv_comp_channel, ChannelDeleter> channel_;
  std::unique_ptr<ibv_cq, CqDeleter> cq_;
  std::unique_ptr<ibv_qp, QpDeleter> qp_;
  uint32_t psn_ = 0;
  IbvConnection remote_;
  bool connected_ = false;
  bool armed_ = false;
  IbvWriteChain chain_;  // reused for every message
};

}  // namespace loom
