// What a transport's handshake needs to know about its communicator: a tag
// that names it on the wire, and a key that proves membership. Handshakes MAC
// fresh nonces with the key and never send it (docs/security.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/keyed_hash.h"

namespace loom {

struct LinkCredentials {
  uint64_t commTag = 0;
  Digest key{};
};

/// What every transport's connect*Links takes besides its own config: this
/// rank, the ranks to connect to, where every rank can be reached (indexed by
/// rank), the communicator's credentials, and how long to try: until
/// `deadline`, or until *abortFlag is set.
struct ConnectRequest {
  int myRank = 0;
  std::vector<int> peers;
  std::vector<std::string> peerAddresses;
  LinkCredentials credentials;
  Deadline deadline = Deadline::never();
  const std::atomic<bool>* abortFlag = nullptr;
};

}  // namespace loom
