// What each rank tells the others during init.
#pragma once

#include <string>

namespace loom {

struct PeerInfo {
  std::string hostId;  // hostname + kernel boot id: equal means shared memory works
  int pid = 0;
  std::string tcpAddress;  // where this rank's tcp listener accepts links
  std::string configSignature;

  std::string serialize() const;
  /// Throws InvalidUsage (naming `fromRank`) on a malformed record.
  static PeerInfo deserialize(const std::string& text, int fromRank);
  static std::string localHostId();
};

}  // namespace loom
