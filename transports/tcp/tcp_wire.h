// Wire formats of the tcp transport, little-endian, fixed size, checked on
// receipt. The handshake tells an acceptor who connected (and refuses strays);
// the message header frames every message on a link's first socket.
#pragma once

#include <cstdint>
#include <cstring>

namespace loom::tcp {

inline void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// Connector -> acceptor, on every socket of a link.
struct Hello {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'C', 'P', '1'};
  static constexpr size_t kBytes = 32;
  uint64_t commTag = 0;
  uint32_t rank = 0;
  uint32_t socketIndex = 0;
  uint32_t socketsPerPeer = 0;
  uint32_t slotBytes = 0;

  void encode(uint8_t* out) const {
    std::memcpy(out, kMagic, 8);
    putU64(out + 8, commTag);
    putU32(out + 16, rank);
    putU32(out + 20, socketIndex);
    putU32(out + 24, socketsPerPeer);
    putU32(out + 28, slotBytes);
  }
  /// False if the magic is wrong.
  bool decode(const uint8_t* in) {
    if (std::memcmp(in, kMagic, 8) != 0) return false;
    commTag = getU64(in + 8);
    rank = getU32(in + 16);
    socketIndex = getU32(in + 20);
    socketsPerPeer = getU32(in + 24);
    slotBytes = getU32(in + 28);
    return true;
  }
};

/// Acceptor -> connector: the acceptor is who the connector meant to reach.
struct Ack {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'C', 'P', 'A'};
  static constexpr size_t kBytes = 24;
  uint64_t commTag = 0;
  uint32_t rank = 0;

  void encode(uint8_t* out) const {
    std::memset(out, 0, kBytes);
    std::memcpy(out, kMagic, 8);
    putU64(out + 8, commTag);
    putU32(out + 16, rank);
  }
  bool decode(const uint8_t* in) {
    if (std::memcmp(in, kMagic, 8) != 0 || getU32(in + 20) != 0) return false;
    commTag = getU64(in + 8);
    rank = getU32(in + 16);
    return true;
  }
};

/// Precedes every message on a link's socket 0: magic, sequence number (low 32
/// bits of the message index, catches a stream out of step) and length.
inline constexpr uint32_t kMessageMagic = 0x4c4d5347;  // "LMSG"
inline constexpr size_t kMessageHeaderBytes = 16;

}  // namespace loom::tcp
