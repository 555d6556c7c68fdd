#include "transports/shm/shm_link.h"

#include "core/error.h"

namespace loom {

ShmLink::ShmLink(int peer, ShmEndpoint out, ShmEndpoint in, Doorbell* peerBell, size_t slotBytes,
                 size_t slots)
    : peer_(peer),
      out_(out),
      in_(in),
      peerBell_(peerBell),
      slotBytes_(slotBytes),
      slots_(slots),
      sendTail_(out.fifo->tail.load(std::memory_order_relaxed)),
      recvHead_(in.fifo->head.load(std::memory_order_relaxed)) {}

void* ShmLink::trySendSlot(size_t bytes) {
  if (bytes > slotBytes_) {
    raise(ErrorCode::InternalError, "shm message of {} bytes exceeds slot size {}", bytes,
          slotBytes_);
  }
  const uint64_t head = out_.fifo->head.load(std::memory_order_acquire);
  if (sendTail_ - head >= slots_) return nullptr;
  return out_.slots + (sendTail_ % slots_) * slotBytes_;
}

void ShmLink::commitSend(size_t bytes) {
  out_.fifo->sizes[sendTail_ % slots_] = bytes | uint64_t{sendStamp_} << 32;
  ++sendTail_;
  out_.fifo->tail.store(sendTail_, std::memory_order_release);
  peerBell_->ring();
}

const void* ShmLink::tryRecv(size_t bytes) {
  const uint64_t tail = in_.fifo->tail.load(std::memory_order_acquire);
  if (tail == recvHead_) return nullptr;
  const size_t slot = recvHead_ % slots_;
  const uint64_t word = in_.fifo->sizes[slot];
  const uint64_t sent = word & 0xffffffffu;
  if (sent != bytes) {
    raise(ErrorCode::RemoteError,
          "rank {} sent a {}-byte message where {} bytes were expected: ranks disagree on the "
          "collective (run with LOOM_CHECK=1 to find the mismatch)",
          peer_, sent, bytes);
  }
  checkStamp(static_cast<uint32_t>(word >> 32));
  return in_.slots + slot * slotBytes_;
}

void ShmLink::releaseRecv() {
  ++recvHead_;
  in_.fifo->head.store(recvHead_, std::memory_order_release);
  peerBell_->ring();
}

}  // namespace loom
