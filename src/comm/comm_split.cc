// loomCommSplit: ranks exchange (color, key) over the parent's bootstrap; the
// first member of each new group starts its rendezvous and shares the id the
// same way; then members initialise the new communicator as usual.
#include <algorithm>
#include <tuple>

#include "comm/child_rendezvous.h"

namespace loom {
namespace {

constexpr std::string_view kSplitLabel = "loom split secret";

}  // namespace

std::unique_ptr<Comm> splitComm(Comm& parent, int color, int key) {
  if (color < 0 && color != LOOM_SPLIT_NOCOLOR) {
    raise(ErrorCode::InvalidArgument, "color={} must be >= 0 or LOOM_SPLIT_NOCOLOR", color);
  }
  const Deadline deadline = Deadline::after(parent.config.timeout);
  const auto choices = parent.bootstrap->allGather(fmt::format("{} {}", color, key), deadline);

  struct Member {
    int key;
    int rank;
  };
  std::vector<Member> group;
  for (int r = 0; r < parent.nranks; ++r) {
    int c = 0;
    int k = 0;
    if (std::sscanf(choices[r].c_str(), "%d %d", &c, &k) != 2) {
      raise(ErrorCode::InternalError, "rank {} sent a malformed split request", r);
    }
    if (c == color && color >= 0) group.push_back({k, r});
  }
  std::sort(group.begin(), group.end(), [](const Member& a, const Member& b) {
    return std::tie(a.key, a.rank) < std::tie(b.key, b.rank);
  });

  int newRank = -1;
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i].rank == parent.rank) newRank = static_cast<int>(i);
  }
  const bool leader = newRank == 0;
  std::string offer;
  if (leader) offer = startChildRendezvous(parent, kSplitLabel).offer;
  const auto offers = parent.bootstrap->allGather(offer, deadline);
  if (color < 0) return nullptr;
  const int from = group.front().rank;
  const UniqueId id = childIdFromOffer(parent, kSplitLabel, offers[from], from);
  return initComm(id, static_cast<int>(group.size()), newRank, inheritedOverrides(parent));
}

}  // namespace loom
