// The rendezvous wire protocol, shared by server and client. All integers are
// little-endian. Version 4 (magic "LOOMBS04"): the client proves it knows the
// secret by MACing the server's challenge, and the server proves it back, so
// the secret never crosses the network; the hello names the process and its
// job; client messages carry a kind so a rank can leave cleanly, and ranks
// publish what they are doing so a rank that times out can say what peers on
// other hosts were doing (ranks on its own host it reads from shared memory).
//
//   server -> client  Challenge frame (on accept): a fresh 16-byte nonce
//   client -> server  hello: magic[8], job u64, nonce[16], mac[32], rank u32,
//                            nranks u32, pid u32, hostLength u32 (<= kMaxHostBytes),
//                            host[64] zero-padded
//                     mac = HMAC-SHA256(secret, "loom bootstrap hello" |
//                           challenge | the hello with its mac zeroed)
//   client -> server  message: kind u32, length u32, payload
//       Round  an all-gather blob, <= kMaxBlobBytes
//       Leave  why, <= kMaxErrorBytes: this rank is done; its disconnect is
//              not a failure. `why` is the first error its calls met (empty:
//              none), which a Closing frame passes on
//       Status kStatusBytes: activity u32 (0 idle, 1 busy, 2 failed), collective u32,
//              sequence u64, count u64
//              (sent only when a wait got slow, and when that call ends)
//       Query  empty: asks for every rank's last Status
//       Revoke why, <= kMaxErrorBytes: this rank revokes the communicator;
//              empty for loomCommRevoke, else the rank found ranks in
//              different calls and `why` is its error
//       Shrink window-ms u32, count u32, count x rank u32: this rank asks to
//              shrink the communicator without those ranks (shrink_agreement.h)
//   server -> client  frame: kind u32, zero u32, length u64, payload
//       Challenge (first, on accept): kNonceBytes
//       Ok     (after hello, once all ranks joined): the server's proof,
//              HMAC-SHA256(secret, "loom bootstrap welcome" | challenge | hello
//              with its mac zeroed), 32 bytes: it binds the client's own nonce;
//              then host rank u32: the rank whose process runs the server
//              (0xffffffff: none, as under loomrun), named if the server dies
//       Error  (refused hello, a rank died, a round that cannot complete):
//              message, <= kMaxErrorBytes; may arrive at any time
//       Gather (a completed round): nranks x {length u32, bytes}, in rank order
//       States (answers Query): nranks x kReportBytes: state u32, collective u32,
//              sequence u64, count u64, age in milliseconds u64
//       Closing why, <= kMaxErrorBytes: the rank whose process runs this server
//              left cleanly, so the server ends with that process; the
//              connection's end is then not a failure (the others may still be
//              finishing their last call). `why` is that rank's Leave payload:
//              the first error its calls met, which names the rank that failed
//              first (empty: none)
//       Left   empty: answers Leave once the others were told, so the leaving
//              process may exit without cutting that message off
//       Revoked rank u32, why (<= kMaxErrorBytes, the Revoke's): that rank
//              revoked the communicator; sent once, to every rank, at any time
//              (not an error: rounds still complete)
//       Agreed (answers Shrink once the survivors agreed): port u32 of the
//              survivors' new rendezvous (0: none), salt[16], count u32, count
//              x rank u32: every rank out of the communicator, ascending
//
// Incremental decoders for both directions live in rendezvous_parser.h.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/keyed_hash.h"
#include "core/wire.h"

namespace loom::rendezvous {

inline constexpr char kHelloMagic[8] = {'L', 'O', 'O', 'M', 'B', 'S', '0', '4'};
inline constexpr size_t kMaxHostBytes = 64;
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kOkBytes = kMacBytes + 4;
inline constexpr uint32_t kNoHostRank = 0xffffffffu;
inline constexpr size_t kMacAt = 32;
inline constexpr size_t kHelloBytes = 80 + kMaxHostBytes;
inline constexpr size_t kMessageHeaderBytes = 8;
inline constexpr size_t kFrameHeaderBytes = 16;
inline constexpr uint32_t kMaxBlobBytes = 1u << 20;
inline constexpr size_t kMaxErrorBytes = 4096;
inline constexpr int kMaxRanks = 1 << 16;
inline constexpr uint32_t kStatusBytes = 24;
inline constexpr size_t kReportBytes = 32;

enum class FrameKind : uint32_t {
  Ok = 1,
  Error = 2,
  Gather = 3,
  States = 4,
  Closing = 5,
  Left = 6,
  Challenge = 7,
  Revoked = 8,
  Agreed = 9,
};
enum class MessageKind : uint32_t {
  Round = 1,
  Leave = 2,
  Status = 3,
  Query = 4,
  Revoke = 5,
  Shrink = 6,
};
inline constexpr size_t kRevokedBytes = 4;

using Nonce = std::array<uint8_t, kNonceBytes>;

struct Hello {
  uint64_t job = 0;
  Nonce nonce{};  // the client's, so the server's proof is fresh for it too
  Digest mac{};
  uint32_t rank = 0;
  uint32_t nranks = 0;
  uint32_t pid = 0;
  /// Printable ASCII without spaces, at most kMaxHostBytes (it ends up in
  /// other ranks' error messages, so the decoder refuses anything else).
  std::string host;
};

/// True when every byte is printable ASCII other than space.
inline bool isPlainText(std::string_view text) {
  for (char c : text) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

/// Writes kHelloBytes. A host that is too long or not plain text is cut or
/// replaced, so encoding never produces a hello the server refuses.
inline void encodeHello(const Hello& hello, uint8_t* out) {
  std::memset(out, 0, kHelloBytes);
  std::memcpy(out, kHelloMagic, 8);
  wire::putU64(out + 8, hello.job);
  std::memcpy(out + 16, hello.nonce.data(), kNonceBytes);
  std::memcpy(out + kMacAt, hello.mac.data(), kMacBytes);
  wire::putU32(out + 64, hello.rank);
  wire::putU32(out + 68, hello.nranks);
  wire::putU32(out + 72, hello.pid);
  std::string_view host(hello.host);
  host = host.substr(0, kMaxHostBytes);
  if (!isPlainText(host)) host = "?";
  wire::putU32(out + 76, static_cast<uint32_t>(host.size()));
  std::memcpy(out + 80, host.data(), host.size());
}

/// Decodes kHelloBytes. Returns an empty string on success, else why the bytes
/// are not a hello (bad magic, host length or characters, non-zero padding).
/// The MAC, job and rank bounds are the server's to check.
inline std::string decodeHello(const uint8_t* in, Hello* hello) {
  if (std::memcmp(in, kHelloMagic, 8) != 0) {
    return "not a Loom bootstrap client of this version (bad magic)";
  }
  hello->job = wire::getU64(in + 8);
  std::memcpy(hello->nonce.data(), in + 16, kNonceBytes);
  std::memcpy(hello->mac.data(), in + kMacAt, kMacBytes);
  hello->rank = wire::getU32(in + 64);
  hello->nranks = wire::getU32(in + 68);
  hello->pid = wire::getU32(in + 72);
  const uint32_t hostLength = wire::getU32(in + 76);
  if (hostLength > kMaxHostBytes) return "hello host name longer than 64 bytes";
  hello->host.assign(reinterpret_cast<const char*>(in + 80), hostLength);
  if (!isPlainText(hello->host)) return "hello host name is not plain text";
  for (size_t i = 80 + hostLength; i < kHelloBytes; ++i) {
    if (in[i] != 0) return "hello padding is not zero";
  }
  return {};
}

inline std::string messageHeader(MessageKind kind, uint32_t length) {
  std::string header(kMessageHeaderBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(header.data());
  wire::putU32(p, static_cast<uint32_t>(kind));
  wire::putU32(p + 4, length);
  return header;
}

/// How a peer's error tells why a rank left (its Leave payload, passed on in
/// Closing or in the answer to a round it left): empty when it met no failure.
inline std::string leftAfter(std::string_view why) {
  return why.empty() ? std::string() : " after its call failed (" + std::string(why) + ")";
}

/// A client message; `payload` must respect the kind's bound (callers check).
inline std::string message(MessageKind kind, std::string_view payload) {
  std::string bytes = messageHeader(kind, static_cast<uint32_t>(payload.size()));
  bytes.append(payload);
  return bytes;
}

inline std::string frameHeader(FrameKind kind, uint64_t length) {
  std::string header(kFrameHeaderBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(header.data());
  wire::putU32(p, static_cast<uint32_t>(kind));
  wire::putU64(p + 8, length);
  return header;
}

inline std::string frame(FrameKind kind, std::string_view payload) {
  std::string bytes = frameHeader(kind, payload.size());
  bytes.append(payload);
  return bytes;
}

/// MACs the challenge and the hello (its mac field left out) with the secret
/// under `label`: "loom bootstrap hello" for the client's proof, "loom
/// bootstrap welcome" for the server's.
inline Digest handshakeMac(const std::array<uint8_t, 16>& secret, std::string_view label,
                           const Nonce& challenge, const Hello& hello) {
  Hello unsigned_ = hello;
  unsigned_.mac = {};
  uint8_t bytes[kHelloBytes];
  encodeHello(unsigned_, bytes);
  return hmacSha256(secret, label, {challenge, bytes});
}

inline constexpr std::string_view kHelloLabel = "loom bootstrap hello";
inline constexpr std::string_view kWelcomeLabel = "loom bootstrap welcome";

}  // namespace loom::rendezvous
