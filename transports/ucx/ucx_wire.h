// What the ucx transport puts on the wire: tag layout, the handshake message,
// and the printable form of worker addresses.
//
// Tags. A rank's worker receives from all its peers, so a data tag names the
// sender; UCP keeps messages of one endpoint and tag in order and matches
// receives of one tag in the order they were posted, which is what makes a
// link a FIFO. Bit 63 separates handshakes from data, so a data receive
// (matched on every bit) never takes a handshake and the handshake's wildcard
// receive (matched on bit 63 only) never takes data:
//   data:      0 | 25 bits folded from commTag | 6 bits channel | 32 bits sender rank
//   handshake: 1 | 0...
// The commTag bits are defence in depth: each communicator has its own worker.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/keyed_hash.h"
#include "core/wire.h"

namespace loom::ucx {

inline constexpr uint64_t kHelloTag = uint64_t{1} << 63;
inline constexpr uint64_t kHelloTagMask = kHelloTag;
inline constexpr uint64_t kDataTagMask = ~uint64_t{0};

/// Links of different channels to one peer share its endpoint; the channel
/// in the tag keeps their FIFOs apart.
inline constexpr int kMaxChannels = 64;

inline uint64_t dataTag(uint64_t commTag, int senderRank, int channel) {
  const uint64_t folded = (commTag ^ (commTag >> 25) ^ (commTag >> 50)) & 0x1ffffffu;
  return (folded << 38) | (static_cast<uint64_t>(channel & (kMaxChannels - 1)) << 32) |
         static_cast<uint32_t>(senderRank);
}

/// Each rank -> each peer, once. `addressHash` (fnv1a of the sender's address
/// as published) tells the receiver the message really comes from the worker it
/// knows as `rank`, so a mismatch there is a stray, not a peer's disagreement.
/// `mac` proves the communicator's link key: HMAC-SHA256 over the hello (mac
/// zeroed) and the receiver's address hash, so a hello is good for one
/// receiving worker of one communicator only (docs/security.md).
struct Hello {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'U', 'C', 'X', '2'};
  static constexpr size_t kBytes = 72;
  static constexpr std::string_view kLabel = "loom ucx hello";
  uint64_t commTag = 0;
  uint32_t rank = 0;
  uint32_t to = 0;  ///< the receiving rank
  uint64_t slotBytes = 0;
  uint64_t addressHash = 0;
  Digest mac{};

  void encode(uint8_t* out) const {
    std::memcpy(out, kMagic, 8);
    wire::putU64(out + 8, commTag);
    wire::putU32(out + 16, rank);
    wire::putU32(out + 20, to);
    wire::putU64(out + 24, slotBytes);
    wire::putU64(out + 32, addressHash);
    std::memcpy(out + 40, mac.data(), mac.size());
  }
  /// False if the magic is wrong.
  bool decode(const uint8_t* in) {
    if (std::memcmp(in, kMagic, 8) != 0) return false;
    commTag = wire::getU64(in + 8);
    rank = wire::getU32(in + 16);
    to = wire::getU32(in + 20);
    slotBytes = wire::getU64(in + 24);
    addressHash = wire::getU64(in + 32);
    std::memcpy(mac.data(), in + 40, mac.size());
    return true;
  }
  /// The MAC this hello must carry for a receiver whose address hashes to `receiverHash`.
  Digest expectedMac(const Digest& key, uint64_t receiverHash) const {
    Hello unsigned_ = *this;
    unsigned_.mac = {};
    uint8_t bytes[kBytes];
    unsigned_.encode(bytes);
    uint8_t receiver[8];
    wire::putU64(receiver, receiverHash);
    return hmacSha256(key, kLabel, {std::span<const uint8_t>(bytes, 40), receiver});
  }
};

// Worker addresses travel hex-encoded: peer info is line-based text.
inline std::string toHex(const void* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

/// nullopt unless `text` is a non-empty, even-length string of hex digits.
inline std::optional<std::vector<uint8_t>> fromHex(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.empty() || text.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out(text.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(text[2 * i]);
    const int lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return out;
}

}  // namespace loom::ucx
