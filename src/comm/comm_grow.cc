// loomCommGrow: one member starts a rendezvous for the grown communicator
// (loomCommGetUniqueId) and the application hands its id to the new ranks.
// The members learn it over the parent's bootstrap, as for a split
// (child_rendezvous.h). Members keep their ranks; new ranks take the ones above them.
#include "comm/child_rendezvous.h"
#include "core/log.h"

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
  ChildRendezvous child = startChildRendezvous(comm, kGrowSecretLabel);
  comm.growOffer = std::move(child.offer);
  LOOM_INFO("rank {}: new ranks grow the communicator through the rendezvous at {}:{}", comm.rank,
            child.id.host, child.id.port);
  return child.id;
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
  const UniqueId id = childIdFromOffer(parent, kGrowSecretLabel, offers[offering], offering);
  return initComm(id, nranks, parent.rank, inheritedOverrides(parent));
}

std::unique_ptr<Comm> joinGrownComm(const UniqueId& id, int nranks, int rank) {
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    raise(ErrorCode::InvalidArgument, "rank={} is outside [0, nranks={})", rank, nranks);
  }
  return initComm(id, nranks, rank);
}

}  // namespace loom
