// UcxLink: a Link over UCP tagged messages to one peer.
//
// Receiving: `slots` receives of `slotBytes` each are always posted, one per
// slot, for the next `slots` messages in order (see ucx_wire.h for why they
// match in order). tryRecv only checks whether the receive of the oldest
// message completed; releaseRecv posts that slot again for the message
// `slots` later. UCX buffers what arrives before its receive is posted, so
// two ranks sending to each other at once never deadlock.
//
// Sending: trySendSlot hands out the next of `slots` send buffers while fewer
// than `slots` sends are in flight; commitSend posts it; a slot is reused once
// its send and those before it completed.
//
// Drained means every send completed locally: UCX handed the bytes to the
// network (HCA, socket) or the peer fetched them (rendezvous). An endpoint
// flush would promise more, but with peer-failure handling UCX completes it
// only when the peer's worker answers, and a peer that has received everything
// it needs may have stopped progressing: the sender would wait for nothing.
// The one gap: UCX's tcp transport may keep the tail of a small message in
// its own buffer while the socket is full, and sends it at our next progress.
//
// Channels: a peer's links of several channels share one endpoint and differ
// in their tags; the endpoint closes with the last of them.
//
// Failure: when UCX reports the peer unreachable, the link raises
// RemoteError as soon as it needs the peer (a message not yet arrived, a send
// outstanding, a new send); messages that arrived before are still
// delivered, as with tcp.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <vector>

#include "transports/link.h"
#include "transports/ucx/ucx_endpoint.h"
#include "transports/ucx/ucx_transport.h"
#include "transports/ucx/ucx_worker.h"

namespace loom {

class UcxLink final : public Link {
 public:
  /// Shares a handshaken endpoint with the peer's links of other channels;
  /// posts the receives.
  UcxLink(std::shared_ptr<ucx::WorkerState> worker, std::shared_ptr<ucx::Endpoint> endpoint,
          uint64_t commTag, int myRank, int channel, const UcxConfig& config);
  ~UcxLink() override;
  UcxLink(const UcxLink&) = delete;
  UcxLink& operator=(const UcxLink&) = delete;

  int peer() const override { return endpoint_->peer(); }
  const char* transportName() const override { return "ucx"; }
  size_t maxMessageBytes() const override { return slotBytes_; }

  void* trySendSlot(size_t bytes) override;
  void commitSend(size_t bytes) override;
  const void* tryRecv(size_t bytes) override;
  void releaseRecv() override;

  bool progress() override;
  bool sendsDrained() const override { return sendTail_ == sendHead_; }
  int pollFd() const override { return worker_->eventFd(); }
  bool wantsWrite() const override { return false; }

 private:
  // Slot memory, apart from the link: at teardown it goes to the worker with
  // any request still using it.
  struct Buffers {
    std::vector<uint8_t> send;
    std::vector<uint8_t> recv;
  };
  struct Receive {
    void* request = nullptr;  // in flight while set
    bool done = false;        // completed, not yet released
    ucs_status_t status = UCS_OK;
    size_t length = 0;
  };

  void postReceive(uint64_t message);
  /// True if the oldest message's receive has just completed.
  bool checkReceive();
  /// True if sends completed.
  bool reapSends();
  void checkPeer(const char* doing) const;
  /// Each slot holds a message and, right after it, its call stamp
  /// (Link::stampSends); slots stay a cache line apart so payloads keep their alignment.
  static constexpr size_t kTrailerBytes = 4;
  static constexpr size_t kSlotPad = 64;
  size_t stride() const { return slotBytes_ + kSlotPad; }
  uint8_t* sendSlot(uint64_t message) { return &buffers_->send[(message % slots_) * stride()]; }
  uint8_t* recvSlot(uint64_t message) { return &buffers_->recv[(message % slots_) * stride()]; }

  std::shared_ptr<ucx::WorkerState> worker_;
  std::shared_ptr<ucx::Endpoint> endpoint_;
  uint64_t sendTag_;
  uint64_t recvTag_;
  size_t slotBytes_;
  uint64_t slots_;
  std::unique_ptr<Buffers> buffers_;

  std::vector<void*> sendRequests_;  // per slot; nullptr once complete
  uint64_t sendHead_ = 0;            // messages committed
  uint64_t sendTail_ = 0;            // messages whose send completed

  std::vector<Receive> receives_;  // per slot
  uint64_t recvHead_ = 0;          // messages released by the consumer
};

}  // namespace loom
