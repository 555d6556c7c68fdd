// Wire formats of the tcp transport, little-endian, fixed size, checked on
// receipt. The handshake tells an acceptor who connected and proves both ends
// know the communicator's key (strays and replays are refused); the message
// header frames every message on a link's first socket.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/keyed_hash.h"
#include "core/wire.h"

namespace loom::tcp {

using wire::getU32;
using wire::getU64;
using wire::putU32;
using wire::putU64;

inline constexpr size_t kNonceBytes = 16;
using Nonce = std::array<uint8_t, kNonceBytes>;

/// Connector -> acceptor, on every socket to a peer. A peer pair has
/// `channels` links of `socketsPerLink` sockets each; socketIndex counts them
/// all, channel by channel. The nonce is fresh per socket and the MAC, keyed
/// with the communicator's link key, covers every byte before it and the
/// acceptor it is meant for (rank and listening address): the acceptor
/// refuses a stranger, a hello meant for another listener, and (remembering
/// nonces) a replayed one.
struct Hello {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'C', 'P', '3'};
  static constexpr size_t kSignedBytes = 48;
  static constexpr size_t kBytes = kSignedBytes + 32;
  uint64_t commTag = 0;
  uint32_t rank = 0;
  uint32_t socketIndex = 0;
  uint16_t socketsPerLink = 0;
  uint16_t channels = 0;
  uint32_t slotBytes = 0;
  Nonce nonce{};
  Digest mac{};

  void encode(uint8_t* out) const {
    encodeSigned(out);
    std::memcpy(out + kSignedBytes, mac.data(), mac.size());
  }
  /// False if the magic is wrong.
  bool decode(const uint8_t* in) {
    if (std::memcmp(in, kMagic, 8) != 0) return false;
    commTag = getU64(in + 8);
    rank = getU32(in + 16);
    socketIndex = getU32(in + 20);
    const uint32_t shape = getU32(in + 24);
    socketsPerLink = static_cast<uint16_t>(shape & 0xffff);
    channels = static_cast<uint16_t>(shape >> 16);
    slotBytes = getU32(in + 28);
    std::memcpy(nonce.data(), in + 32, nonce.size());
    std::memcpy(mac.data(), in + kSignedBytes, mac.size());
    return true;
  }
  Digest expectedMac(const Digest& key, uint32_t toRank, std::string_view toAddress) const {
    uint8_t bytes[kSignedBytes + 4];
    encodeSigned(bytes);
    putU32(bytes + kSignedBytes, toRank);
    return hmacSha256(key, "loom tcp hello", {bytes, bytesOf(toAddress)});
  }

 private:
  void encodeSigned(uint8_t* out) const {
    std::memcpy(out, kMagic, 8);
    putU64(out + 8, commTag);
    putU32(out + 16, rank);
    putU32(out + 20, socketIndex);
    putU32(out + 24, static_cast<uint32_t>(channels) << 16 | socketsPerLink);
    putU32(out + 28, slotBytes);
    std::memcpy(out + 32, nonce.data(), nonce.size());
  }
};

/// Acceptor -> connector: the acceptor is who the connector meant to reach,
/// and knows the key (its MAC covers the ack and the hello's nonce).
struct Ack {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'C', 'P', 'A'};
  static constexpr size_t kSignedBytes = 24;
  static constexpr size_t kBytes = kSignedBytes + 32;
  uint64_t commTag = 0;
  uint32_t rank = 0;
  Digest mac{};

  void encode(uint8_t* out) const {
    encodeSigned(out);
    std::memcpy(out + kSignedBytes, mac.data(), mac.size());
  }
  bool decode(const uint8_t* in) {
    if (std::memcmp(in, kMagic, 8) != 0 || getU32(in + 20) != 0) return false;
    commTag = getU64(in + 8);
    rank = getU32(in + 16);
    std::memcpy(mac.data(), in + kSignedBytes, mac.size());
    return true;
  }
  Digest expectedMac(const Digest& key, const Nonce& helloNonce) const {
    uint8_t bytes[kSignedBytes];
    encodeSigned(bytes);
    return hmacSha256(key, "loom tcp ack", {bytes, helloNonce});
  }

 private:
  void encodeSigned(uint8_t* out) const {
    std::memset(out, 0, kSignedBytes);
    std::memcpy(out, kMagic, 8);
    putU64(out + 8, commTag);
    putU32(out + 16, rank);
  }
};

/// Precedes every message on a link's socket 0: magic u32, sequence number u32
/// (low 32 bits of the message index, catches a stream out of step), length
/// u32 and the call stamp u32 (Link::stampSends; 0: not checked).
inline constexpr uint32_t kMessageMagic = 0x4c4d5347;  // "LMSG"
inline constexpr size_t kMessageHeaderBytes = 16;

}  // namespace loom::tcp
