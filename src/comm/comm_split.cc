// loomCommSplit: ranks exchange (color, key) over the parent's bootstrap; the
// first member of each new group starts its rendezvous and shares the id the
// same way; then members initialise the new communicator as usual.
#include <algorithm>
#include <tuple>

#include "comm/comm.h"
#include "core/socket.h"

namespace loom {

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
  // The leader serves where its own links listen: loopback for a job on one
  // host, else the interface that reaches the parent's peers.
  RendezvousOptions options;
  options.bindHost = SocketAddress::parse(parent.tcpListener->address()).host();
  const std::string offer = leader ? startRendezvous(options).toHex() : std::string();
  const auto offers = parent.bootstrap->allGather(offer, deadline);
  if (color < 0) return nullptr;
  const UniqueId id = UniqueId::fromHex(offers[group.front().rank]);
  // A split keeps its parent's deadline, whether it came from the
  // environment or from loomCommInitRankConfig.
  CommOverrides inherited;
  inherited.timeout = parent.config.timeout;
  return initComm(id, static_cast<int>(group.size()), newRank, inherited);
}

}  // namespace loom
