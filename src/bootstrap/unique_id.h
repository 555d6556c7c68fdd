// The 128-byte unique id: rendezvous address, secret and job, with a
// bounds-checked wire form (it crosses processes, often through environment
// variables).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/keyed_hash.h"
#include "loom/loom.h"

namespace loom {

struct UniqueId {
  /// Numeric host address ("127.0.0.1", "10.1.2.3", "::1").
  std::string host;
  uint16_t port = 0;
  /// Proves membership: handshakes MAC a fresh challenge with it, and never
  /// send it.
  std::array<uint8_t, 16> secret{};
  /// Names the job (not secret): a rank of another job that shares the
  /// rendezvous address and secret is refused by name, and two such jobs get
  /// different communicator tags and link keys.
  uint64_t job = 0;

  /// Fixed 128-byte form: magic, version, family, port, address, secret, job,
  /// checksum.
  loomUniqueId serialize() const;
  /// Throws Error(InvalidArgument, "malformed unique id: <why>") on any
  /// inconsistency (magic, version, family, length, checksum).
  static UniqueId deserialize(const loomUniqueId& raw);

  /// 256 lowercase hex digits of serialize(), for LOOM_UNIQUE_ID.
  std::string toHex() const;
  static UniqueId fromHex(const std::string& hex);

  /// A 64-bit tag derived from secret and job (a one-way function of them),
  /// for naming shm segments and telling communicators apart on the wire.
  uint64_t tag() const;
  /// The key the transports' handshakes MAC with, derived from secret and job.
  Digest linkKey() const;
};

}  // namespace loom
