// Fuzzes PeerInfo::deserialize, which reads what every other rank sends at
// init. Accepted records must survive serialize -> deserialize unchanged;
// refused ones must be InvalidUsage naming the sending rank.
#include <cstdint>
#include <string>

#include "comm/peer_info.h"
#include "core/error.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

bool same(const loom::PeerInfo& a, const loom::PeerInfo& b) {
  return a.hostId == b.hostId && a.pid == b.pid && a.tcpAddress == b.tcpAddress &&
         a.configSignature == b.configSignature;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  loom::PeerInfo info;
  try {
    info = loom::PeerInfo::deserialize(text, 7);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::InvalidUsage);
    FUZZ_CHECK(std::string(e.what()).find("rank 7") != std::string::npos);
    return 0;
  }
  const std::string once = info.serialize();
  const loom::PeerInfo again = loom::PeerInfo::deserialize(once, 7);
  FUZZ_CHECK(same(info, again));
  FUZZ_CHECK(again.serialize() == once);
#ifdef LOOM_FUZZ_STRICT_PEER_INFO
  // Canonical form: no second spelling of the same record is accepted. Off by
  // default until deserialize refuses pids like " 12", "+12", "12abc", "-5".
  FUZZ_CHECK(once == text);
  FUZZ_CHECK(info.pid > 0);
#endif
  return 0;
}
