#include "transports/ucx/ucx_link.h"

#include "core/error.h"
#include "core/wire.h"
#include "transports/ucx/ucx_wire.h"

namespace loom {

UcxLink::UcxLink(std::shared_ptr<ucx::WorkerState> worker, std::shared_ptr<ucx::Endpoint> endpoint,
                 uint64_t commTag, int myRank, int channel, const UcxConfig& config)
    : worker_(std::move(worker)),
      endpoint_(std::move(endpoint)),
      sendTag_(ucx::dataTag(commTag, myRank, channel)),
      recvTag_(ucx::dataTag(commTag, endpoint_->peer(), channel)),
      slotBytes_(config.slotBytes),
      slots_(static_cast<uint64_t>(config.slots)),
      buffers_(std::make_unique<Buffers>()),
      sendRequests_(slots_, nullptr),
      receives_(slots_) {
  buffers_->send.resize(slots_ * stride());
  buffers_->recv.resize(slots_ * stride());
  try {
    for (uint64_t m = 0; m < slots_; ++m) postReceive(m);
  } catch (...) {
    std::vector<void*> posted;
    for (Receive& r : receives_) {
      if (r.request != nullptr) ucp_request_cancel(worker_->worker(), r.request);
      posted.push_back(r.request);
    }
    worker_->retire(std::move(posted), std::shared_ptr<Buffers>(std::move(buffers_)));
    throw;
  }
}

UcxLink::~UcxLink() {
  std::vector<void*> requests;
  for (Receive& r : receives_) {
    if (r.request == nullptr) continue;
    ucp_request_cancel(worker_->worker(), r.request);
    requests.push_back(r.request);
  }
  for (void* request : sendRequests_) requests.push_back(request);
  // Closing the endpoint (with the peer's last link) completes the sends, with
  // an error if still in flight.
  endpoint_.reset();
  worker_->retire(std::move(requests), std::shared_ptr<Buffers>(std::move(buffers_)));
}

void UcxLink::checkPeer(const char* doing) const {
  const ucs_status_t failure = endpoint_->failure();
  if (failure != UCS_OK) {
    raise(ErrorCode::RemoteError, "ucx link to rank {} failed {}: {} (peer gone?)", peer(), doing,
          ucx::statusText(failure));
  }
}

void* UcxLink::trySendSlot(size_t bytes) {
  if (bytes > slotBytes_) {
    raise(ErrorCode::InvalidArgument,
          "ucx link to rank {}: message of {} bytes exceeds the {} byte slot", peer(), bytes,
          slotBytes_);
  }
  checkPeer("while sending");
  if (sendHead_ - sendTail_ >= slots_) {
    reapSends();
    if (sendHead_ - sendTail_ >= slots_) return nullptr;
  }
  return sendSlot(sendHead_);
}

void UcxLink::commitSend(size_t bytes) {
  if (bytes > slotBytes_ || sendHead_ - sendTail_ >= slots_) {
    raise(ErrorCode::InternalError, "ucx link to rank {}: commitSend({}) without a free slot",
          peer(), bytes);
  }
  uint8_t* slot = sendSlot(sendHead_);
  wire::putU32(slot + bytes, sendStamp_);
  ucp_request_param_t params{};
  const ucs_status_ptr_t request =
      ucp_tag_send_nbx(endpoint_->ep(), slot, bytes + kTrailerBytes, sendTag_, &params);
  if (UCS_PTR_IS_ERR(request)) {
    raise(ErrorCode::RemoteError, "ucx link to rank {}: sending message {} ({} bytes) failed: {}",
          peer(), sendHead_, bytes, ucx::statusText(UCS_PTR_STATUS(request)));
  }
  sendRequests_[sendHead_ % slots_] = request;  // nullptr: completed already
  ++sendHead_;
}

bool UcxLink::reapSends() {
  bool moved = false;
  while (sendTail_ < sendHead_) {
    void*& request = sendRequests_[sendTail_ % slots_];
    if (request != nullptr) {
      const ucs_status_t status = ucp_request_check_status(request);
      if (status == UCS_INPROGRESS) break;
      ucp_request_free(request);
      request = nullptr;
      if (status != UCS_OK) {
        raise(ErrorCode::RemoteError,
              "ucx link to rank {}: message {} was not delivered: {} (peer gone?)", peer(),
              sendTail_, ucx::statusText(status));
      }
    }
    ++sendTail_;
    moved = true;
  }
  return moved;
}

void UcxLink::postReceive(uint64_t message) {
  receives_[message % slots_] =
      Receive{ucx::postTagReceive(worker_->worker(), recvSlot(message), slotBytes_ + kTrailerBytes,
                                  recvTag_, ucx::kDataTagMask, peer())};
}

bool UcxLink::checkReceive() {
  Receive& r = receives_[recvHead_ % slots_];
  if (r.done) return false;
  ucp_tag_recv_info_t info{};
  const ucs_status_t status = ucp_tag_recv_request_test(r.request, &info);
  if (status == UCS_INPROGRESS) return false;
  ucp_request_free(r.request);
  r.request = nullptr;
  r.done = true;
  r.status = status;
  r.length = info.length;
  return true;
}

const void* UcxLink::tryRecv(size_t bytes) {
  checkReceive();
  const Receive& r = receives_[recvHead_ % slots_];
  if (!r.done) {
    checkPeer("while a message was expected");
    return nullptr;
  }
  if (r.status == UCS_ERR_MESSAGE_TRUNCATED) {
    raise(ErrorCode::RemoteError,
          "ucx link from rank {}: message {} is larger than the {} byte slot (ranks disagree on "
          "the configuration)",
          peer(), recvHead_, slotBytes_);
  }
  if (r.status != UCS_OK) {
    raise(ErrorCode::RemoteError, "ucx link from rank {}: receiving message {} failed: {}", peer(),
          recvHead_, ucx::statusText(r.status));
  }
  if (r.length < kTrailerBytes || r.length - kTrailerBytes != bytes) {
    raise(ErrorCode::RemoteError,
          "ucx link from rank {}: message {} expected {} bytes, peer sent {} (ranks disagree on "
          "the plan)",
          peer(), recvHead_, bytes, r.length < kTrailerBytes ? r.length : r.length - kTrailerBytes);
  }
  checkStamp(wire::getU32(recvSlot(recvHead_) + bytes));
  return recvSlot(recvHead_);
}

void UcxLink::releaseRecv() {
  if (!receives_[recvHead_ % slots_].done) {
    raise(ErrorCode::InternalError, "ucx link from rank {}: releaseRecv without a message", peer());
  }
  postReceive(recvHead_ + slots_);
  ++recvHead_;
}

bool UcxLink::progress() {
  worker_->progress();
  // Only this link's own movement counts: UCX reports work for other links
  // and internal traffic too, and a caller that never saw "nothing moved"
  // would never check its deadline.
  bool moved = reapSends();
  moved |= checkReceive();
  if (!sendsDrained()) checkPeer("with sends in flight");
  return moved;
}

}  // namespace loom
