#include "transports/ibverbs/ibv_ring.h"

#include "core/error.h"

namespace loom {
namespace {

constexpr uint32_t kSequenceMask = 0x7f;
constexpr uint32_t kReleasedMask = 0x7fffffff;

}  // namespace

IbvRing::IbvRing(int peer, uint32_t slots, size_t slotBytes, size_t maxBytesPerWr)
    : peer_(peer),
      slots_(slots),
      slotBytes_(slotBytes),
      maxBytesPerWr_(maxBytesPerWr),
      sendLength_(slots),
      recvLength_(slots) {
  if (slots < 1 || slots > IbvConnection::kMaxSlots || slotBytes < 1 ||
      slotBytes > IbvConnection::kMaxSlotBytes || maxBytesPerWr < 1) {
    raise(ErrorCode::InvalidArgument,
          "ibverbs link to rank {}: slots={} (1..{}), slotBytes={} (1..{}), maxBytesPerWr={} (>= "
          "1) out of range",
          peer, slots, IbvConnection::kMaxSlots, slotBytes, IbvConnection::kMaxSlotBytes,
          maxBytesPerWr);
  }
  sendQueueDepth_ = size_t{slots} * ibvWritesPerMessage(slotBytes, maxBytesPerWr) + 1;
}

std::optional<uint32_t> IbvRing::sendSlot() const {
  if (sendHead_ - sendDone_ >= slots_) return std::nullopt;
  return static_cast<uint32_t>(sendHead_ % slots_);
}

void IbvRing::commit(size_t bytes) {
  if (!sendSlot() || bytes > slotBytes_) {
    raise(ErrorCode::InternalError, "ibverbs link to rank {}: commitSend({}) without a free slot",
          peer_, bytes);
  }
  sendLength_[sendHead_ % slots_] = bytes;
  ++sendHead_;
}

std::optional<IbvRing::Write> IbvRing::nextWrite() const {
  if (sendPosted_ == sendHead_ || sendPosted_ - peerReleased_ >= slots_) return std::nullopt;
  const auto slot = static_cast<uint32_t>(sendPosted_ % slots_);
  const size_t bytes = sendLength_[slot];
  if (sendQueueUsed_ + ibvWritesPerMessage(bytes, maxBytesPerWr_) > sendQueueDepth_) {
    return std::nullopt;
  }
  return Write{sendPosted_, slot, bytes};
}

void IbvRing::writePosted() {
  const size_t requests = ibvWritesPerMessage(sendLength_[sendPosted_ % slots_], maxBytesPerWr_);
  inFlight_.push_back({IbvWrKind::Data, requests});
  sendQueueUsed_ += requests;
  ++sendPosted_;
}

std::optional<uint64_t> IbvRing::nextCredit() const {
  if (creditInFlight_ || creditSent_ == recvReleased_ || sendQueueUsed_ >= sendQueueDepth_) {
    return std::nullopt;
  }
  return recvReleased_;
}

void IbvRing::creditPosted(uint64_t released) {
  inFlight_.push_back({IbvWrKind::Credit, 1});
  ++sendQueueUsed_;
  creditInFlight_ = true;
  creditSent_ = released;
}

void IbvRing::sendCompleted(IbvWrKind kind) {
  if (inFlight_.empty() || inFlight_.front().kind != kind) {
    raise(ErrorCode::InternalError,
          "ibverbs link to rank {}: send completion of kind {} out of order ({} in flight)", peer_,
          static_cast<int>(kind), inFlight_.size());
  }
  sendQueueUsed_ -= inFlight_.front().requests;
  inFlight_.pop_front();
  if (kind == IbvWrKind::Data) {
    ++sendDone_;
  } else {
    creditInFlight_ = false;
  }
}

void IbvRing::dataArrived(const IbvImmediate& imm) {
  if (imm.kind != IbvImmediate::Kind::Data) {
    raise(ErrorCode::InternalError, "ibverbs link from rank {}: credit taken for data", peer_);
  }
  const uint64_t message = recvArrived_;
  if (imm.sequence != (message & kSequenceMask)) {
    raise(ErrorCode::RemoteError,
          "ibverbs link from rank {}: message {} arrived with sequence {} (expected {}): the "
          "stream is out of step",
          peer_, message, imm.sequence, message & kSequenceMask);
  }
  if (imm.length > slotBytes_) {
    raise(ErrorCode::RemoteError,
          "ibverbs link from rank {}: message {} claims {} bytes, more than the {} byte slot",
          peer_, message, imm.length, slotBytes_);
  }
  if (recvArrived_ - recvReleased_ >= slots_) {
    raise(ErrorCode::RemoteError,
          "ibverbs link from rank {}: message {} arrived while all {} slots were full (the peer "
          "wrote without credit)",
          peer_, message, slots_);
  }
  recvLength_[message % slots_] = imm.length;
  ++recvArrived_;
}

void IbvRing::creditArrived(const IbvImmediate& imm) {
  if (imm.kind != IbvImmediate::Kind::Credit) {
    raise(ErrorCode::InternalError, "ibverbs link to rank {}: data taken for a credit", peer_);
  }
  const uint64_t delta = (imm.released - peerReleased_) & kReleasedMask;
  if (peerReleased_ + delta > sendPosted_) {
    raise(ErrorCode::RemoteError,
          "ibverbs link to rank {}: peer released {} messages but only {} were written", peer_,
          peerReleased_ + delta, sendPosted_);
  }
  peerReleased_ += delta;
}

std::optional<uint32_t> IbvRing::recvSlot(size_t bytes) const {
  if (recvReleased_ == recvArrived_) return std::nullopt;
  const auto slot = static_cast<uint32_t>(recvReleased_ % slots_);
  if (recvLength_[slot] != bytes) {
    raise(ErrorCode::RemoteError,
          "ibverbs link from rank {}: message {} expected {} bytes, peer sent {} (ranks disagree "
          "on the plan)",
          peer_, recvReleased_, bytes, recvLength_[slot]);
  }
  return slot;
}

void IbvRing::release() {
  if (recvReleased_ == recvArrived_) {
    raise(ErrorCode::InternalError, "ibverbs link from rank {}: releaseRecv without a message",
          peer_);
  }
  ++recvReleased_;
}

}  // namespace loom
