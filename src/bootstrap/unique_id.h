// The 128-byte unique id: rendezvous address + secret, with a bounds-checked
// wire form (it crosses processes, often through environment variables).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "loom/loom.h"

namespace loom {

struct UniqueId {
  /// Numeric host address ("127.0.0.1", "10.1.2.3", "::1").
  std::string host;
  uint16_t port = 0;
  std::array<uint8_t, 16> secret{};

  /// Fixed 128-byte form: magic, version, family, port, address, secret, checksum.
  loomUniqueId serialize() const;
  /// Throws Error(InvalidArgument, "malformed unique id: <why>") on any
  /// inconsistency (magic, version, family, length, checksum).
  static UniqueId deserialize(const loomUniqueId& raw);

  /// 256 lowercase hex digits of serialize(), for LOOM_UNIQUE_ID.
  std::string toHex() const;
  static UniqueId fromHex(const std::string& hex);

  /// A 64-bit tag derived from the secret, for naming shm segments and checking
  /// that tcp connections belong to this communicator.
  uint64_t tag() const;
};

}  // namespace loom
