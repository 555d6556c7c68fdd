// loomCommSplit: ranks exchange (color, key) over the parent's bootstrap; the
// first member of each new group starts its rendezvous and shares the id the
// same way; then members initialise the new communicator as usual.
#include <algorithm>
#include <tuple>

#include "bootstrap/secret.h"
#include "comm/comm.h"
#include "core/keyed_hash.h"
#include "core/socket.h"

namespace loom {
namespace {

constexpr size_t kSaltBytes = 16;

// The parent's bootstrap connections are authenticated but not encrypted, so
// the new id crosses them without its secret: each member derives the secret
// from the parent's and a fresh salt, which alone tells an eavesdropper nothing.
std::array<uint8_t, 16> splitSecret(const UniqueId& parent, std::span<const uint8_t> salt) {
  return childSecret(parent.secret, "loom split secret", salt);
}

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
  // The leader serves where its own links listen: loopback for a job on one
  // host, else the interface that reaches the parent's peers.
  std::string offer;
  if (leader) {
    const auto salt = randomArray<kSaltBytes>();
    RendezvousOptions options;
    options.bindHost = SocketAddress::parse(parent.tcpListener->address()).host();
    options.secret = splitSecret(parent.id, salt);
    UniqueId published = startRendezvous(options);
    published.secret = {};
    offer.assign(reinterpret_cast<const char*>(salt.data()), salt.size());
    offer += published.toHex();
  }
  const auto offers = parent.bootstrap->allGather(offer, deadline);
  if (color < 0) return nullptr;
  const std::string& chosen = offers[group.front().rank];
  if (chosen.size() <= kSaltBytes) {
    raise(ErrorCode::InternalError, "rank {} sent a malformed split offer", group.front().rank);
  }
  UniqueId id = UniqueId::fromHex(chosen.substr(kSaltBytes));
  id.secret = splitSecret(parent.id, bytesOf(std::string_view(chosen).substr(0, kSaltBytes)));
  // A split keeps its parent's deadline, whether it came from the
  // environment or from loomCommInitRankConfig.
  CommOverrides inherited;
  inherited.timeout = parent.config.timeout;
  return initComm(id, static_cast<int>(group.size()), newRank, inherited);
}

}  // namespace loom
