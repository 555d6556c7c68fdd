// loomCommShrink: the survivors agree, through the parent's rendezvous, on
// which ranks are out (shrink_agreement.h), then form a new communicator over
// the others, renumbered in their old order. The rendezvous starts the new
// communicator's own rendezvous beside itself and sends only a salt; each
// survivor derives the new secret from the parent's.
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "bootstrap/secret.h"
#include "comm/child_rendezvous.h"
#include "comm/comm.h"
#include "core/log.h"

namespace loom {
namespace {

// The verdict comes at most one window after the first asker's request; this
// covers the round trip and a busy server on top.
constexpr std::chrono::seconds kVerdictSlack{5};

std::vector<uint32_t> checkedExclusions(const Comm& parent, std::span<const int> exclude) {
  std::vector<uint32_t> ranks;
  std::vector<bool> seen(parent.nranks);
  for (const int r : exclude) {
    if (r < 0 || r >= parent.nranks) {
      raise(ErrorCode::InvalidArgument, "excluded rank {} is outside [0, nranks={})", r,
            parent.nranks);
    }
    if (r == parent.rank) {
      raise(ErrorCode::InvalidArgument,
            "rank {} excludes itself: a rank that leaves does not call loomCommShrink", r);
    }
    if (seen[r]) raise(ErrorCode::InvalidArgument, "rank {} is excluded twice", r);
    seen[r] = true;
    ranks.push_back(static_cast<uint32_t>(r));
  }
  return ranks;
}

std::string rankList(const std::vector<uint32_t>& ranks) {
  return ranks.empty() ? std::string("none") : fmt::format("{}", fmt::join(ranks, ", "));
}

}  // namespace

std::unique_ptr<Comm> shrinkComm(Comm& parent, std::span<const int> exclude, int flags) {
  if (flags != LOOM_SHRINK_DEFAULT && flags != LOOM_SHRINK_ABORT) {
    raise(ErrorCode::InvalidArgument,
          "flags={} must be LOOM_SHRINK_DEFAULT (0) or LOOM_SHRINK_ABORT (1)", flags);
  }
  ShrinkRequest request;
  request.excluded = checkedExclusions(parent, exclude);
  // A rank still silent after one deadline is as good as stalled.
  request.window = parent.config.timeout;
  // Calls of this communicator still waiting on any rank end now.
  if (flags == LOOM_SHRINK_ABORT) revokeComm(parent);

  const auto started = std::chrono::steady_clock::now();
  const ShrinkVerdict verdict =
      parent.bootstrap->agreeToShrink(request, Deadline::after(request.window + kVerdictSlack));
  const auto tookMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();

  std::vector<bool> out(parent.nranks);
  for (const uint32_t r : verdict.out) out[r] = true;
  if (out[parent.rank]) {
    raise(ErrorCode::InvalidUsage,
          "rank {} is not in the shrunk communicator: the survivors agreed that ranks {} are out "
          "(another rank excluded this one, or it asked after they agreed, more than one "
          "LOOM_TIMEOUT after the first)",
          parent.rank, rankList(verdict.out));
  }
  if (verdict.port == 0) {
    raise(ErrorCode::RemoteError, "the rendezvous could not start one for the survivors");
  }
  int survivors = 0;
  int newRank = 0;
  for (int r = 0; r < parent.nranks; ++r) {
    if (out[r]) continue;
    if (r == parent.rank) newRank = survivors;
    ++survivors;
  }
  LOOM_INFO("rank {}: shrink agreed in {:.1f} ms: ranks {} are out; now rank {} of {}", parent.rank,
            tookMs, rankList(verdict.out), newRank, survivors);

  UniqueId id;
  id.host = parent.id.host;
  id.port = verdict.port;
  id.secret = childSecret(parent.id.secret, kShrinkSecretLabel, verdict.salt);
  id.job = childJob(parent.id.secret, kShrinkJobLabel, verdict.salt);
  return initComm(id, survivors, newRank, inheritedOverrides(parent));
}

}  // namespace loom
