// Incremental decoders for both directions of the rendezvous protocol
// (rendezvous_protocol.h). They own no socket: bytes go in exactly as they
// arrived, in any split, and whole messages come out. Server, client and the
// fuzzers share them, so the code that reads the network is the code fuzzed.
//
// Every length is checked against its bound as soon as its header is complete,
// before the payload is buffered, so a peer cannot make a parser hold more than
// one bounded message plus whatever the caller fed in one go.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/peer_status.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_agreement.h"

namespace loom::rendezvous {

/// Bytes received and not yet decoded, consumed from the front.
class ByteQueue {
 public:
  void append(const void* data, size_t size);
  size_t size() const { return bytes_.size() - start_; }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(bytes_.data()) + start_; }
  std::string take(size_t offset, size_t length) const {
    return bytes_.substr(start_ + offset, length);
  }
  void consume(size_t n) { start_ += n; }

 private:
  std::string bytes_;
  size_t start_ = 0;  // bytes before start_ are decoded; dropped lazily on append
};

struct Frame {
  FrameKind kind = FrameKind::Ok;
  std::string payload;
};

/// Decodes server -> client frames.
class FrameParser {
 public:
  /// Payload bounds follow the world size: a Gather holds at most nranks x
  /// (4 + kMaxBlobBytes), a States nranks x kReportBytes.
  explicit FrameParser(int nranks);

  void feed(const void* data, size_t size) { queue_.append(data, size); }
  /// The next whole frame, or nullopt until more bytes arrive. Throws
  /// Error(RemoteError, why) on a malformed header, and again on every later
  /// call: after one bad header the stream cannot be trusted.
  std::optional<Frame> next();
  /// Bytes fed but not yet returned as frames (a partial frame).
  size_t buffered() const { return queue_.size(); }

 private:
  /// The payload sizes a frame kind may declare.
  struct PayloadBounds {
    uint64_t least = 0;
    uint64_t most = 0;
    bool exact = false;  ///< the payload has exactly `most` bytes
  };

  ByteQueue queue_;
  /// By kind; empty for a value that is no FrameKind.
  std::array<std::optional<PayloadBounds>, static_cast<size_t>(FrameKind::Agreed) + 1> bounds_{};
  std::string error_;
};

struct ClientMessage {
  enum class Kind { Hello, Round, Leave, Status, Query, Revoke, Shrink };
  Kind kind = Kind::Hello;
  Hello hello;        // Kind::Hello
  std::string blob;   // Kind::Round; Kind::Leave, Kind::Revoke: why; Kind::Shrink: the
                      // payload, which the server decodes once it knows nranks
  PeerStatus status;  // Kind::Status
};

/// Decodes client -> server bytes: one hello, then the messages of MessageKind.
class MessageParser {
 public:
  void feed(const void* data, size_t size) { queue_.append(data, size); }
  /// Like FrameParser::next. A wrong magic is reported as soon as the first
  /// differing byte arrives, so a stray is dropped without waiting for a whole hello.
  std::optional<ClientMessage> next();
  size_t buffered() const { return queue_.size(); }

 private:
  ByteQueue queue_;
  bool helloDone_ = false;
  std::string error_;
};

/// A Gather payload: every blob as {length u32, bytes}, in rank order.
std::string encodeGather(const std::vector<std::string>& blobs);
/// Splits a Gather payload into exactly `nranks` blobs; throws
/// Error(RemoteError, why) on a short, overlong or out-of-bounds payload.
std::vector<std::string> decodeGather(std::string_view payload, int nranks);

}  // namespace loom::rendezvous
