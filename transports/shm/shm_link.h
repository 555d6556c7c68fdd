// A Link between two ranks on one host: this rank pushes into its FIFO inside
// the peer's segment and pops from the peer's FIFO inside its own segment. No
// syscalls on the hot path; a doorbell ring is a single atomic add unless the
// other side sleeps.
#pragma once

#include "transports/link.h"
#include "transports/shm/shm_layout.h"

namespace loom {

struct ShmEndpoint {
  FifoControl* fifo = nullptr;
  char* slots = nullptr;  // slot 0 of this FIFO
};

class ShmLink final : public Link {
 public:
  /// `out`: my FIFO in the peer's segment; `in`: the peer's FIFO in mine;
  /// `peerBell`: the peer's doorbell (rung after publish and after consume).
  ShmLink(int peer, ShmEndpoint out, ShmEndpoint in, Doorbell* peerBell, size_t slotBytes,
          size_t slots);

  int peer() const override { return peer_; }
  const char* transportName() const override { return "shm"; }
  size_t maxMessageBytes() const override { return slotBytes_; }
  void* trySendSlot(size_t bytes) override;
  void commitSend(size_t bytes) override;
  const void* tryRecv(size_t bytes) override;
  void releaseRecv() override;

 private:
  int peer_;
  ShmEndpoint out_;
  ShmEndpoint in_;
  Doorbell* peerBell_;
  size_t slotBytes_;
  size_t slots_;
  uint64_t sendTail_;  // our copy of out_.fifo->tail (we are its only writer)
  uint64_t recvHead_;  // our copy of in_.fifo->head (we are its only writer)
};

}  // namespace loom
