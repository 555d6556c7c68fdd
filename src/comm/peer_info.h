// What each rank tells the others during init.
#pragma once

#include <string>
#include <vector>

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

/// Every rank's host as a number, hosts numbered in order of their lowest
/// rank (equal hostId, equal number).
std::vector<int> hostNumbers(const std::vector<PeerInfo>& peers);

}  // namespace loom
