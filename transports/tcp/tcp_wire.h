// Wire formats of the tcp transport, little-endian, fixed size, checked on
// receipt. The handshake tells an acceptor who connected (and refuses strays);
// the message header frames every message on a link's first socket.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/wire.h"

namespace loom::tcp {

using wire::getU32;
using wire::getU64;
using wire::putU32;
using wire::putU64;

/// Connector -> acceptor, on every socket to a peer. A peer pair has
/// `channels` links of `socketsPerLink` sockets each; socketIndex counts them
/// all, channel by channel.
struct Hello {
  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'C', 'P', '2'};
  static constexpr size_t kBytes = 32;
  uint64_t commTag = 0;
  uint32_t rank = 0;
  uint32_t socketIndex = 0;
  uint16_t socketsPerLink = 0;
  uint16_t channels = 0;
  uint32_t slotBytes = 0;

  void encode(uint8_t* out) const {
    std::memcpy(out, kMagic, 8);
    putU64(out + 8, commTag);
    putU32(out + 16, rank);
    putU32(out + 20, socketIndex);
    putU32(out + 24, static_cast<uint32_t>(channels) << 16 | socketsPerLink);
    putU32(out + 28, slotBytes);
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
