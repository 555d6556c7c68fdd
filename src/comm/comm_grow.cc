// loomCommGrow: one member starts a rendezvous for the grown communicator
// (loomCommGetUniqueId) and the application hands its id to the new ranks.
// The members learn it over the parent's bootstrap, as a salt and the id
// without its secret: they derive the secret from the parent's, as for a
// split. Members keep their ranks; new ranks take the ones above them.
#include "bootstrap/secret.h"
#include "comm/comm.h"
#include "core/keyed_hash.h"
#include "core/log.h"
#include "core/socket.h"

namespace loom {
namespace {

constexpr std::string_view kGrowSecretLabel = "loom grow secret";

}  // namespace

UniqueId startGrowRendezvous(Comm& comm) {
  if (!comm.growOffer.empty()) {
    raise(ErrorCode::InvalidUsage,
          "rank {} already started a rendezvous to grow this communicator; hand that id to the "
          "new ranks",
          comm.rank);
  }
  const auto salt = randomArray<kShrinkSaltBytes>();
  RendezvousOptions options;
  // Where this rank's links listen: loopback for a job on one host, else the
  // interface that reaches the peers.
  options.bindHost = SocketAddress::parse(comm.tcpListener->address()).host();
  options.secret = childSecret(comm.id.secret, kGrowSecretLabel, salt);
  UniqueId id = startRendezvous(options);
  UniqueId published = id;
  published.secret = {};
  comm.growOffer.assign(reinterpret_cast<const char*>(salt.data()), salt.size());
  comm.growOffer += published.toHex();
  LOOM_INFO("rank {}: new ranks grow the communicator through the rendezvous at {}:{}", comm.rank,
            id.host, id.port);
  return id;
}

std::unique_ptr<Comm> growComm(Comm& parent, int nranks) {
  if (nranks <= parent.nranks) {
    raise(ErrorCode::InvalidArgument, "nranks={} must be above the communicator's {} ranks", nranks,
          parent.nranks);
  }
  const Deadline deadline = Deadline::after(parent.config.timeout);
  const auto offers = parent.bootstrap->allGather(parent.growOffer, deadline);
  parent.growOffer.clear();
  int offering = -1;
  for (int r = 0; r < parent.nranks; ++r) {
    if (offers[r].empty()) continue;
    if (offering >= 0) {
      raise(ErrorCode::InvalidUsage,
            "ranks {} and {} both called loomCommGetUniqueId on this communicator: exactly one "
            "member starts the rendezvous of a grow",
            offering, r);
    }
    offering = r;
  }
  if (offering < 0) {
    raise(ErrorCode::InvalidUsage,
          "no member called loomCommGetUniqueId on this communicator before loomCommGrow, so the "
          "new ranks have no rendezvous to join");
  }
  const std::string& offer = offers[offering];
  if (offer.size() <= kShrinkSaltBytes) {
    raise(ErrorCode::InternalError, "rank {} sent a malformed grow offer", offering);
  }
  UniqueId id = UniqueId::fromHex(offer.substr(kShrinkSaltBytes));
  id.secret = childSecret(parent.id.secret, kGrowSecretLabel,
                          bytesOf(std::string_view(offer).substr(0, kShrinkSaltBytes)));
  CommOverrides inherited;
  inherited.timeout = parent.config.timeout;
  return initComm(id, nranks, parent.rank, inherited);
}

std::unique_ptr<Comm> joinGrownComm(const UniqueId& id, int nranks, int rank) {
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    raise(ErrorCode::InvalidArgument, "rank={} is outside [0, nranks={})", rank, nranks);
  }
  return initComm(id, nranks, rank);
}

}  // namespace loom
