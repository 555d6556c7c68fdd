// What a transport's handshake needs to know about its communicator: a tag
// that names it on the wire, and a key that proves membership. Handshakes MAC
// fresh nonces with the key and never send it (docs/security.md).
#pragma once

#include <cstdint>

#include "core/keyed_hash.h"

namespace loom {

struct LinkCredentials {
  uint64_t commTag = 0;
  Digest key{};
};

}  // namespace loom
