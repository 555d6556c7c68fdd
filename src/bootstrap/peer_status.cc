#include "bootstrap/peer_status.h"

#include "bootstrap/rendezvous_protocol.h"
#include "core/error.h"

namespace loom::rendezvous {
namespace {

const uint8_t* bytesOf(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace

std::string encodeStatus(const PeerStatus& status) {
  std::string payload(kStatusBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(payload.data());
  wire::putU32(p, status.busy ? 1 : (status.failed ? 2 : 0));
  wire::putU32(p + 4, status.collective);
  wire::putU64(p + 8, status.sequence);
  wire::putU64(p + 16, status.count);
  return payload;
}

PeerStatus decodeStatus(std::string_view payload) {
  if (payload.size() != kStatusBytes) {
    raise(ErrorCode::RemoteError, "status message of {} bytes, not {}", payload.size(),
          kStatusBytes);
  }
  const uint8_t* p = bytesOf(payload);
  const uint32_t activity = wire::getU32(p);
  if (activity > 2) {
    raise(ErrorCode::RemoteError, "status message activity is {}, not 0, 1 or 2", activity);
  }
  PeerStatus status;
  status.busy = activity == 1;
  status.failed = activity == 2;
  status.collective = wire::getU32(p + 4);
  status.sequence = wire::getU64(p + 8);
  status.count = wire::getU64(p + 16);
  return status;
}

std::string encodeReports(const std::vector<PeerReport>& reports) {
  std::string payload(reports.size() * kReportBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(payload.data());
  for (const PeerReport& r : reports) {
    wire::putU32(p, static_cast<uint32_t>(r.state));
    wire::putU32(p + 4, r.status.collective);
    wire::putU64(p + 8, r.status.sequence);
    wire::putU64(p + 16, r.status.count);
    wire::putU64(p + 24, r.ageMillis);
    p += kReportBytes;
  }
  return payload;
}

std::vector<PeerReport> decodeReports(std::string_view payload, int nranks) {
  if (nranks < 0 || payload.size() != static_cast<size_t>(nranks) * kReportBytes) {
    raise(ErrorCode::RemoteError, "states payload of {} bytes for {} ranks (need {} per rank)",
          payload.size(), nranks, kReportBytes);
  }
  std::vector<PeerReport> reports(static_cast<size_t>(nranks));
  const uint8_t* p = bytesOf(payload);
  for (int r = 0; r < nranks; ++r, p += kReportBytes) {
    const uint32_t state = wire::getU32(p);
    if (state > static_cast<uint32_t>(PeerReport::State::Failed)) {
      raise(ErrorCode::RemoteError, "states payload: rank {} has unknown state {}", r, state);
    }
    PeerReport& report = reports[static_cast<size_t>(r)];
    report.state = static_cast<PeerReport::State>(state);
    report.status.busy = report.state == PeerReport::State::Busy;
    report.status.failed = report.state == PeerReport::State::Failed;
    report.status.collective = wire::getU32(p + 4);
    report.status.sequence = wire::getU64(p + 8);
    report.status.count = wire::getU64(p + 16);
    report.ageMillis = wire::getU64(p + 24);
  }
  return reports;
}

}  // namespace loom::rendezvous
