// Fuzzes what the rendezvous server parses from a client (one hello, then
// Round/Leave/Status/Query/Revoke/Shrink messages) with the MessageParser the
// server itself uses, and a Shrink payload with the decoder the server runs on it.
// Invariants:
//  - fed whole or in random pieces, the parser yields the same messages and
//    the same error: a message split by the network is never lost or misread;
//  - the messages re-encode to exactly the bytes consumed (canonical format);
//  - what stays buffered is less than one bounded message;
//  - a Shrink payload either fails to decode (RemoteError) or re-encodes to itself.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_parser.h"
#include "core/error.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_split.h"

namespace {

using namespace loom::rendezvous;

struct Outcome {
  std::vector<std::string> encoded;  // each message, re-encoded
  std::string error;
  size_t buffered = 0;
};

// The server decodes a Shrink payload once it knows the world size; any size will do here.
void checkShrinkRequest(const std::string& payload) {
  constexpr int kRanks = 8;
  loom::ShrinkRequest request;
  try {
    request = decodeShrinkRequest(payload, kRanks);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
    return;
  }
  FUZZ_CHECK(request.excluded.size() <= kRanks);
  for (const uint32_t r : request.excluded) FUZZ_CHECK(r < kRanks);
  FUZZ_CHECK(encodeShrinkRequest(request) == payload);
}

std::string encode(const ClientMessage& m) {
  switch (m.kind) {
    case ClientMessage::Kind::Hello: {
      std::string bytes(kHelloBytes, '\0');
      encodeHello(m.hello, reinterpret_cast<uint8_t*>(bytes.data()));
      return bytes;
    }
    case ClientMessage::Kind::Round:
      FUZZ_CHECK(m.blob.size() <= kMaxBlobBytes);
      return message(MessageKind::Round, m.blob);
    case ClientMessage::Kind::Leave:
      FUZZ_CHECK(m.blob.size() <= kMaxErrorBytes);
      return message(MessageKind::Leave, m.blob);
    case ClientMessage::Kind::Status:
      FUZZ_CHECK(m.blob.empty());
      return message(MessageKind::Status, encodeStatus(m.status));
    case ClientMessage::Kind::Query:
      FUZZ_CHECK(m.blob.empty());
      return message(MessageKind::Query, "");
    case ClientMessage::Kind::Revoke:
      FUZZ_CHECK(m.blob.size() <= kMaxErrorBytes);
      return message(MessageKind::Revoke, m.blob);
    case ClientMessage::Kind::Shrink:
      FUZZ_CHECK(m.blob.size() <= kMaxShrinkBytes);
      checkShrinkRequest(m.blob);
      return message(MessageKind::Shrink, m.blob);
  }
  FUZZ_CHECK(false);
  return {};
}

// Drains every complete message; false once the parser reported an error.
bool drain(MessageParser& parser, Outcome& out) {
  try {
    while (auto m = parser.next()) {
      // Only the first message may be a hello, and it must be first.
      FUZZ_CHECK((m->kind == ClientMessage::Kind::Hello) == out.encoded.empty());
      out.encoded.push_back(encode(*m));
    }
    return true;
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
    out.error = e.what();
    // Sticky: the same error again, whatever is fed next.
    parser.feed("x", 1);
    try {
      parser.next();
      FUZZ_CHECK(false);
    } catch (const loom::Error& again) {
      FUZZ_CHECK(out.error == again.what());
    }
    return false;
  }
}

Outcome parse(const uint8_t* data, size_t size, std::optional<uint32_t> seed) {
  MessageParser parser;
  Outcome out;
  if (!seed) {
    parser.feed(data, size);
    drain(parser, out);
  } else {
    loom::fuzz::Splitter split(*seed);
    size_t at = 0;
    while (at < size) {
      const size_t n = std::min(split.next(), size - at);
      parser.feed(data + at, n);
      at += n;
      if (!drain(parser, out)) break;
    }
  }
  out.buffered = parser.buffered();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t seed = data[0];
  const Outcome whole = parse(data + 1, size - 1, std::nullopt);
  const Outcome pieces = parse(data + 1, size - 1, seed);
  FUZZ_CHECK(whole.encoded == pieces.encoded);
  FUZZ_CHECK(whole.error == pieces.error);
  std::string consumed;
  for (const auto& m : whole.encoded) consumed += m;
  FUZZ_CHECK(consumed.size() <= size - 1);
  FUZZ_CHECK(consumed.compare(0, consumed.size(), reinterpret_cast<const char*>(data + 1),
                              consumed.size()) == 0);
  if (whole.error.empty()) {
    FUZZ_CHECK(consumed.size() + whole.buffered == size - 1);
    FUZZ_CHECK(whole.buffered < kMessageHeaderBytes + kMaxBlobBytes || whole.encoded.empty());
    if (whole.encoded.empty()) FUZZ_CHECK(whole.buffered < kHelloBytes);
  }
  return 0;
}
