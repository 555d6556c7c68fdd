#include "comm/child_rendezvous.h"

#include "bootstrap/secret.h"
#include "core/keyed_hash.h"
#include "core/socket.h"

namespace loom {
namespace {

constexpr size_t kSaltBytes = 16;

}  // namespace

ChildRendezvous startChildRendezvous(const Comm& parent, std::string_view label) {
  const auto salt = randomArray<kSaltBytes>();
  RendezvousOptions options;
  options.bindHost = SocketAddress::parse(parent.tcpListener->address()).host();
  options.secret = childSecret(parent.id.secret, label, salt);
  ChildRendezvous child{startRendezvous(options), {}};
  UniqueId published = child.id;
  published.secret = {};
  child.offer.assign(reinterpret_cast<const char*>(salt.data()), salt.size());
  child.offer += published.toHex();
  return child;
}

UniqueId childIdFromOffer(const Comm& parent, std::string_view label, const std::string& offer,
                          int from) {
  if (offer.size() <= kSaltBytes) {
    raise(ErrorCode::InternalError, "rank {} sent a malformed rendezvous offer", from);
  }
  UniqueId id = UniqueId::fromHex(offer.substr(kSaltBytes));
  id.secret =
      childSecret(parent.id.secret, label, bytesOf(std::string_view(offer).substr(0, kSaltBytes)));
  return id;
}

CommOverrides inheritedOverrides(const Comm& parent) {
  // Whether it came from the environment or from loomCommInitRankConfig.
  CommOverrides inherited;
  inherited.timeout = parent.config.timeout;
  return inherited;
}

}  // namespace loom
