// What a rank says it is doing, relayed by the rendezvous server so that a
// rank whose wait timed out can name what its peers on other hosts were doing.
// The collective is an opaque code here (the bootstrap knows nothing of
// collectives); the communicator range-checks it before it interprets it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

struct PeerStatus {
  bool busy = false;        ///< inside a call (a wait in it got slow)
  bool failed = false;      ///< not busy: the call ended with an error (timeout, dead peer)
  uint32_t collective = 0;  ///< the call's kind, as the communicator encodes it
  uint64_t sequence = 0;    ///< busy: collectives before this one; idle: collectives done
  uint64_t count = 0;       ///< elements of the call
};

/// The server's view of one rank when asked.
struct PeerReport {
  enum class State : uint32_t {
    Silent = 0,  ///< joined, never reported (none of its waits got slow)
    Busy = 1,    ///< last report: waiting inside a call
    Idle = 2,    ///< last report: that call ended
    Gone = 3,    ///< disconnected (left, died or closed its connection)
    Failed = 4,  ///< last report: that call ended with an error
  };
  State state = State::Silent;
  PeerStatus status;
  uint64_t ageMillis = 0;  ///< time since the report, at the server
};

namespace rendezvous {

/// Status message payload (kStatusBytes).
std::string encodeStatus(const PeerStatus& status);
/// Throws Error(RemoteError) unless `payload` is exactly kStatusBytes with a
/// known activity (0 idle, 1 busy, 2 failed).
PeerStatus decodeStatus(std::string_view payload);
/// States frame payload: one kReportBytes record per rank, in rank order.
std::string encodeReports(const std::vector<PeerReport>& reports);
/// Throws Error(RemoteError) unless `payload` holds exactly `nranks` valid records.
std::vector<PeerReport> decodeReports(std::string_view payload, int nranks);

}  // namespace rendezvous
}  // namespace loom
