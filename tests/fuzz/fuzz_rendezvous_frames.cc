// Fuzzes what a rank parses from the rendezvous server: frames (FrameParser,
// shared with the client), Gather payloads (decodeGather) and States payloads
// (decodeReports), Agreed payloads (decodeShrinkVerdict). Invariants:
//  - whole or in random pieces, the same frames and the same error;
//  - frames re-encode to exactly the bytes consumed, within their bounds;
//  - a Gather, States or Agreed payload that decodes for n ranks re-encodes to itself.
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
  std::vector<Frame> frames;
  std::string error;
  size_t buffered = 0;
};

bool drain(FrameParser& parser, Outcome& out) {
  try {
    while (auto f = parser.next()) out.frames.push_back(std::move(*f));
    return true;
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
    out.error = e.what();
    return false;
  }
}

Outcome parse(const uint8_t* data, size_t size, int nranks, std::optional<uint32_t> seed) {
  FrameParser parser(nranks);
  Outcome out;
  if (!seed) {
    parser.feed(data, size);
    drain(parser, out);
  } else {
    loom::fuzz::Splitter split(*seed);
    for (size_t at = 0; at < size;) {
      const size_t n = std::min(split.next(), size - at);
      parser.feed(data + at, n);
      at += n;
      if (!drain(parser, out)) break;
    }
  }
  out.buffered = parser.buffered();
  return out;
}

void checkGather(const std::string& payload, int nranks) {
  std::vector<std::string> blobs;
  try {
    blobs = decodeGather(payload, nranks);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
    return;
  }
  FUZZ_CHECK(blobs.size() == static_cast<size_t>(nranks));
  for (const auto& blob : blobs) FUZZ_CHECK(blob.size() <= kMaxBlobBytes);
  FUZZ_CHECK(encodeGather(blobs) == payload);
}

void checkReports(const std::string& payload, int nranks) {
  std::vector<loom::PeerReport> reports;
  try {
    reports = decodeReports(payload, nranks);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
    return;
  }
  FUZZ_CHECK(reports.size() == static_cast<size_t>(nranks));
  FUZZ_CHECK(encodeReports(reports) == payload);
}

void checkVerdict(const std::string& payload, int nranks) {
  loom::ShrinkVerdict verdict;
  try {
    verdict = decodeShrinkVerdict(payload, nranks);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
    return;
  }
  for (size_t i = 0; i < verdict.out.size(); ++i) {
    FUZZ_CHECK(verdict.out[i] < static_cast<uint32_t>(nranks));
    FUZZ_CHECK(i == 0 || verdict.out[i] > verdict.out[i - 1]);
  }
  FUZZ_CHECK(encodeShrinkVerdict(verdict) == payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // data[0]: piece sizes; data[1]: world size for the Gather bound and decode.
  const uint32_t seed = data[0];
  const int nranks = 1 + data[1] % 8;
  const uint64_t maxGather = static_cast<uint64_t>(nranks) * (4 + kMaxBlobBytes);
  data += 2;
  size -= 2;
  const Outcome whole = parse(data, size, nranks, std::nullopt);
  const Outcome pieces = parse(data, size, nranks, seed);
  FUZZ_CHECK(whole.error == pieces.error);
  FUZZ_CHECK(whole.frames.size() == pieces.frames.size());
  std::string consumed;
  for (size_t i = 0; i < whole.frames.size(); ++i) {
    const Frame& f = whole.frames[i];
    FUZZ_CHECK(f.kind == pieces.frames[i].kind && f.payload == pieces.frames[i].payload);
    switch (f.kind) {
      case FrameKind::Ok:
        FUZZ_CHECK(f.payload.size() == kOkBytes);
        break;
      case FrameKind::Challenge:
        FUZZ_CHECK(f.payload.size() == kNonceBytes);
        break;
      case FrameKind::Revoked:
        FUZZ_CHECK(f.payload.size() >= kRevokedBytes &&
                   f.payload.size() <= kRevokedBytes + kMaxErrorBytes);
        break;
      case FrameKind::Left:
        FUZZ_CHECK(f.payload.empty());
        break;
      case FrameKind::Closing:
      case FrameKind::Error:
        FUZZ_CHECK(f.payload.size() <= kMaxErrorBytes);
        break;
      case FrameKind::Gather:
        FUZZ_CHECK(f.payload.size() <= maxGather);
        checkGather(f.payload, nranks);
        break;
      case FrameKind::States:
        FUZZ_CHECK(f.payload.size() <= static_cast<size_t>(nranks) * kReportBytes);
        checkReports(f.payload, nranks);
        break;
      case FrameKind::Agreed:
        FUZZ_CHECK(f.payload.size() <= kAgreedHeaderBytes + static_cast<size_t>(nranks) * 4);
        checkVerdict(f.payload, nranks);
        break;
      default:
        FUZZ_CHECK(false);
    }
    consumed += frame(f.kind, f.payload);
  }
  FUZZ_CHECK(consumed.size() <= size);
  FUZZ_CHECK(consumed.compare(0, consumed.size(), reinterpret_cast<const char*>(data),
                              consumed.size()) == 0);
  if (whole.error.empty()) FUZZ_CHECK(consumed.size() + whole.buffered == size);
  // Any bytes also make a Gather payload: the decoder must hold on its own.
  checkGather(std::string(reinterpret_cast<const char*>(data), size), nranks);
  checkReports(std::string(reinterpret_cast<const char*>(data), size), nranks);
  checkVerdict(std::string(reinterpret_cast<const char*>(data), size), nranks);
  return 0;
}
