#include "bootstrap/shrink_agreement.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/wire.h"

namespace loom {
namespace rendezvous {
namespace {

const uint8_t* bytes(std::string_view text) {
  return reinterpret_cast<const uint8_t*>(text.data());
}

void appendU32(std::string& out, uint32_t value) {
  uint8_t word[4];
  wire::putU32(word, value);
  out.append(reinterpret_cast<const char*>(word), 4);
}

/// Appends a count of ranks, then the ranks.
void appendRanks(std::string& out, const std::vector<uint32_t>& ranks) {
  appendU32(out, static_cast<uint32_t>(ranks.size()));
  for (const uint32_t rank : ranks) appendU32(out, rank);
}

/// Reads what appendRanks wrote at the end of a header of `headerBytes`
/// (whose last word is the count), which ends the payload: each rank below
/// `nranks`, and strictly increasing where `ascending`. `what` names the
/// payload in errors; one too short for its header is one too.
std::vector<uint32_t> decodeRanks(std::string_view payload, size_t headerBytes, int nranks,
                                  bool ascending, const char* what) {
  if (payload.size() < headerBytes) {
    raise(ErrorCode::RemoteError, "{} of {} bytes is too short", what, payload.size());
  }
  const uint32_t count = wire::getU32(bytes(payload) + headerBytes - 4);
  if (count > static_cast<uint32_t>(nranks) || payload.size() != headerBytes + 4 * size_t{count}) {
    raise(ErrorCode::RemoteError, "{} of {} bytes does not hold {} ranks of {}", what,
          payload.size(), count, nranks);
  }
  std::vector<uint32_t> ranks(count);
  for (uint32_t i = 0; i < count; ++i) {
    ranks[i] = wire::getU32(bytes(payload) + headerBytes + 4 * size_t{i});
    if (ranks[i] >= static_cast<uint32_t>(nranks)) {
      raise(ErrorCode::RemoteError, "{} names rank {} of {}", what, ranks[i], nranks);
    }
    if (ascending && i > 0 && ranks[i] <= ranks[i - 1]) {
      raise(ErrorCode::RemoteError, "{} ranks are not ascending", what);
    }
  }
  return ranks;
}

}  // namespace

std::string encodeShrinkRequest(const ShrinkRequest& request) {
  std::string out;
  appendU32(out, static_cast<uint32_t>(std::clamp<int64_t>(request.window.count(), 0, UINT32_MAX)));
  appendRanks(out, request.excluded);
  return out;
}

ShrinkRequest decodeShrinkRequest(std::string_view payload, int nranks) {
  ShrinkRequest request;
  request.excluded = decodeRanks(payload, kShrinkHeaderBytes, nranks, false, "shrink request");
  request.window = std::chrono::milliseconds(wire::getU32(bytes(payload)));
  return request;
}

std::string encodeShrinkVerdict(const ShrinkVerdict& verdict) {
  std::string out;
  appendU32(out, verdict.port);
  out.append(reinterpret_cast<const char*>(verdict.salt.data()), verdict.salt.size());
  appendRanks(out, verdict.out);
  return out;
}

ShrinkVerdict decodeShrinkVerdict(std::string_view payload, int nranks) {
  ShrinkVerdict verdict;
  verdict.out = decodeRanks(payload, kAgreedHeaderBytes, nranks, true, "shrink verdict");
  const uint32_t port = wire::getU32(bytes(payload));
  if (port > UINT16_MAX) raise(ErrorCode::RemoteError, "shrink verdict names port {}", port);
  verdict.port = static_cast<uint16_t>(port);
  std::memcpy(verdict.salt.data(), payload.data() + 4, kShrinkSaltBytes);
  return verdict;
}

}  // namespace rendezvous

ShrinkAgreement::ShrinkAgreement(int nranks)
    : out_(nranks), gone_(nranks), asked_(nranks), named_(nranks) {}

void ShrinkAgreement::ask(int rank, const ShrinkRequest& request, Clock::time_point now) {
  if (!closesAt_) closesAt_ = now + request.window;
  asked_[rank] = 1;
  for (const uint32_t r : request.excluded) named_[r] = 1;
}

void ShrinkAgreement::markGone(int rank) { gone_[rank] = 1; }

bool ShrinkAgreement::decided(Clock::time_point now) const {
  if (!closesAt_) return false;
  if (now >= *closesAt_) return true;
  for (size_t r = 0; r < out_.size(); ++r) {
    if (!out_[r] && !asked_[r] && !gone_[r] && !named_[r]) return false;
  }
  return true;
}

std::vector<int> ShrinkAgreement::close(std::vector<uint32_t>* out) {
  std::vector<int> askers;
  for (size_t r = 0; r < out_.size(); ++r) {
    if (asked_[r]) askers.push_back(static_cast<int>(r));
    // Named by an asker, gone, or silent through the whole window.
    if (named_[r] || gone_[r] || !asked_[r]) out_[r] = 1;
  }
  std::fill(asked_.begin(), asked_.end(), 0);
  std::fill(named_.begin(), named_.end(), 0);
  closesAt_.reset();
  *out = outRanks();
  return askers;
}

std::vector<uint32_t> ShrinkAgreement::outRanks() const {
  std::vector<uint32_t> ranks;
  for (size_t r = 0; r < out_.size(); ++r) {
    if (out_[r]) ranks.push_back(static_cast<uint32_t>(r));
  }
  return ranks;
}

int ShrinkAgreement::survivors() const {
  return static_cast<int>(std::count(out_.begin(), out_.end(), uint8_t{0}));
}

}  // namespace loom
