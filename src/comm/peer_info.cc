#include "comm/peer_info.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <map>
#include <vector>

#include "core/error.h"

namespace loom {
namespace {

// Fields are separated by '\n'; none of them can contain one.
constexpr char kSeparator = '\n';
constexpr std::string_view kVersion = "loom-peer-1";

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(kSeparator, start);
    fields.push_back(
        text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return fields;
}

}  // namespace

// Same kernel (boot id) and same network namespace. Ranks in different
// namespaces are treated as different hosts even if they could share memory:
// that is how multi-host set-ups are emulated on one machine, and it is never
// wrong, only slower.
std::string PeerInfo::localHostId() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string bootId;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, bootId);
  char netns[64] = {};
  const ssize_t n = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
  return std::string(host) + "/" + bootId + "/" + (n > 0 ? std::string(netns, n) : "");
}

std::string PeerInfo::serialize() const {
  return fmt::format("{}\n{}\n{}\n{}\n{}", kVersion, hostId, pid, tcpAddress, configSignature);
}

PeerInfo PeerInfo::deserialize(const std::string& text, int fromRank) {
  const auto fields = split(text);
  if (fields.size() != 5 || fields[0] != kVersion) {
    raise(ErrorCode::InvalidUsage,
          "rank {} sent a peer record Loom cannot read ({} fields): mixed Loom versions?", fromRank,
          fields.size());
  }
  PeerInfo info;
  info.hostId = fields[1];
  // Canonical digits only, so one pid has one spelling (the fuzzer checks round trips).
  const std::string& pid = fields[2];
  const auto [end, ec] = std::from_chars(pid.data(), pid.data() + pid.size(), info.pid);
  if (ec != std::errc() || end != pid.data() + pid.size() || info.pid <= 0 || pid[0] == '0') {
    raise(ErrorCode::InvalidUsage, "rank {} sent a malformed pid '{}'", fromRank, pid);
  }
  info.tcpAddress = fields[3];
  info.configSignature = fields[4];
  return info;
}

std::vector<int> hostNumbers(const std::vector<PeerInfo>& peers) {
  std::map<std::string, int> numbers;
  std::vector<int> hostOf;
  hostOf.reserve(peers.size());
  for (const PeerInfo& p : peers) {
    hostOf.push_back(numbers.try_emplace(p.hostId, static_cast<int>(numbers.size())).first->second);
  }
  return hostOf;
}

}  // namespace loom
