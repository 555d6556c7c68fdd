#include "bootstrap/rendezvous_parser.h"

#include <utility>

#include "core/error.h"

namespace loom::rendezvous {
namespace {

/// A client message kind as it is sent, as it is parsed, and the most bytes
/// its payload may declare.
struct MessageBound {
  MessageKind sent;
  ClientMessage::Kind kind;
  uint32_t limit;
};

const MessageBound* boundOf(uint32_t rawKind) {
  static constexpr MessageBound kBounds[] = {
      {MessageKind::Round, ClientMessage::Kind::Round, kMaxBlobBytes},
      {MessageKind::Leave, ClientMessage::Kind::Leave, kMaxErrorBytes},
      {MessageKind::Status, ClientMessage::Kind::Status, kStatusBytes},
      {MessageKind::Query, ClientMessage::Kind::Query, 0},
      {MessageKind::Revoke, ClientMessage::Kind::Revoke, kMaxErrorBytes},
      {MessageKind::Shrink, ClientMessage::Kind::Shrink, kMaxShrinkBytes}};
  for (const MessageBound& bound : kBounds) {
    if (static_cast<uint32_t>(bound.sent) == rawKind) return &bound;
  }
  return nullptr;
}

}  // namespace

void ByteQueue::append(const void* data, size_t size) {
  // Compact only when the decoded prefix is at least half the buffer, so each
  // byte is moved O(1) times on average.
  if (start_ > 0 && start_ >= bytes_.size() / 2) {
    bytes_.erase(0, start_);
    start_ = 0;
  }
  bytes_.append(static_cast<const char*>(data), size);
}

FrameParser::FrameParser(int nranks) {
  const auto n = static_cast<uint64_t>(nranks);
  const auto exactly = [](uint64_t bytes) { return PayloadBounds{bytes, bytes, true}; };
  const auto upTo = [](uint64_t bytes) { return PayloadBounds{0, bytes, false}; };
  const std::pair<FrameKind, PayloadBounds> bounds[] = {
      {FrameKind::Ok, exactly(kOkBytes)},
      {FrameKind::Challenge, exactly(kNonceBytes)},
      {FrameKind::Revoked, {kRevokedBytes, kRevokedBytes + kMaxErrorBytes, false}},
      {FrameKind::Left, upTo(0)},
      {FrameKind::Closing, upTo(kMaxErrorBytes)},
      {FrameKind::Error, upTo(kMaxErrorBytes)},
      {FrameKind::Gather, upTo(n * (4 + kMaxBlobBytes))},
      {FrameKind::States, upTo(n * kReportBytes)},
      {FrameKind::Agreed, upTo(kAgreedHeaderBytes + n * 4)}};
  for (const auto& [kind, bound] : bounds) bounds_[static_cast<size_t>(kind)] = bound;
}

std::optional<Frame> FrameParser::next() {
  if (!error_.empty()) throw Error(ErrorCode::RemoteError, error_);
  if (queue_.size() < kFrameHeaderBytes) return std::nullopt;
  const uint8_t* header = queue_.data();
  const uint32_t rawKind = wire::getU32(header);
  const uint32_t zero = wire::getU32(header + 4);
  const uint64_t length = wire::getU64(header + 8);
  if (rawKind >= bounds_.size() || !bounds_[rawKind]) {
    error_ = fmt::format("unknown frame kind {}", rawKind);
    throw Error(ErrorCode::RemoteError, error_);
  }
  const uint64_t least = bounds_[rawKind]->least;
  const uint64_t limit = bounds_[rawKind]->most;
  const bool exact = bounds_[rawKind]->exact;
  if (zero != 0) {
    error_ = fmt::format("frame header reserved word is {:#x}, not 0", zero);
    throw Error(ErrorCode::RemoteError, error_);
  }
  if (length > limit || (exact && length != limit)) {
    error_ = fmt::format("frame of kind {} declares {} bytes, {} {}", rawKind, length,
                         exact ? "not" : "over its bound of", limit);
    throw Error(ErrorCode::RemoteError, error_);
  }
  if (length < least) {
    error_ = fmt::format("frame of kind {} declares {} bytes, under its least of {}", rawKind,
                         length, least);
    throw Error(ErrorCode::RemoteError, error_);
  }
  if (queue_.size() - kFrameHeaderBytes < length) return std::nullopt;
  Frame frame{static_cast<FrameKind>(rawKind), queue_.take(kFrameHeaderBytes, length)};
  queue_.consume(kFrameHeaderBytes + length);
  return frame;
}

std::optional<ClientMessage> MessageParser::next() {
  if (!error_.empty()) throw Error(ErrorCode::RemoteError, error_);
  if (!helloDone_) {
    const size_t prefix = std::min(queue_.size(), sizeof(kHelloMagic));
    if (std::memcmp(queue_.data(), kHelloMagic, prefix) != 0) {
      error_ = "not a Loom bootstrap client of this version (bad magic)";
      throw Error(ErrorCode::RemoteError, error_);
    }
    if (queue_.size() < kHelloBytes) return std::nullopt;
    ClientMessage message;
    error_ = decodeHello(queue_.data(), &message.hello);
    if (!error_.empty()) throw Error(ErrorCode::RemoteError, error_);
    queue_.consume(kHelloBytes);
    helloDone_ = true;
    return message;
  }
  if (queue_.size() < kMessageHeaderBytes) return std::nullopt;
  const uint32_t rawKind = wire::getU32(queue_.data());
  const uint32_t length = wire::getU32(queue_.data() + 4);
  const MessageBound* bound = boundOf(rawKind);
  if (bound == nullptr) {
    error_ = fmt::format("unknown message kind {}", rawKind);
    throw Error(ErrorCode::RemoteError, error_);
  }
  ClientMessage message;
  message.kind = bound->kind;
  const uint32_t limit = bound->limit;
  if (length > limit) {
    error_ = fmt::format("message of kind {} declares {} bytes, over its bound of {}", rawKind,
                         length, limit);
    throw Error(ErrorCode::RemoteError, error_);
  }
  if (message.kind == ClientMessage::Kind::Status && length != kStatusBytes) {
    error_ = fmt::format("status message declares {} bytes, not {}", length, kStatusBytes);
    throw Error(ErrorCode::RemoteError, error_);
  }
  if (queue_.size() - kMessageHeaderBytes < length) return std::nullopt;
  message.blob = queue_.take(kMessageHeaderBytes, length);
  if (message.kind == ClientMessage::Kind::Status) {
    try {
      message.status = decodeStatus(message.blob);
    } catch (const Error& e) {
      error_ = e.what();
      throw;
    }
    message.blob.clear();
  }
  queue_.consume(kMessageHeaderBytes + length);
  return message;
}

std::string encodeGather(const std::vector<std::string>& blobs) {
  size_t total = 0;
  for (const auto& blob : blobs) total += 4 + blob.size();
  std::string payload;
  payload.reserve(total);
  for (const auto& blob : blobs) {
    uint8_t length[4];
    wire::putU32(length, static_cast<uint32_t>(blob.size()));
    payload.append(reinterpret_cast<const char*>(length), 4);
    payload += blob;
  }
  return payload;
}

std::vector<std::string> decodeGather(std::string_view payload, int nranks) {
  std::vector<std::string> blobs;
  blobs.reserve(static_cast<size_t>(std::max(nranks, 0)));
  size_t at = 0;
  for (int r = 0; r < nranks; ++r) {
    if (payload.size() - at < 4) {
      raise(ErrorCode::RemoteError, "gather payload of {} bytes ends before rank {}'s length",
            payload.size(), r);
    }
    const uint32_t length = wire::getU32(reinterpret_cast<const uint8_t*>(payload.data() + at));
    at += 4;
    if (length > kMaxBlobBytes || payload.size() - at < length) {
      raise(ErrorCode::RemoteError,
            "gather payload: rank {}'s blob of {} bytes is over {} or past the end ({} left)", r,
            length, kMaxBlobBytes, payload.size() - at);
    }
    blobs.emplace_back(payload.substr(at, length));
    at += length;
  }
  if (at != payload.size()) {
    raise(ErrorCode::RemoteError, "gather payload has {} trailing bytes after {} blobs",
          payload.size() - at, nranks);
  }
  return blobs;
}

}  // namespace loom::rendezvous
