// startRendezvous: picks the address and secret, then hands a RendezvousServer
// to a detached thread that owns it until the job is done with it.
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_server.h"
#include "bootstrap/secret.h"
#include "core/env.h"
#include "core/log.h"

namespace loom {

UniqueId startRendezvous(const RendezvousOptions& options) {
  const auto joinTimeout = std::chrono::seconds(envInt("LOOM_TIMEOUT", 300, 1, 7 * 86400));
  std::string host = options.bindHost;
  if (host.empty()) host = envString("LOOM_BOOTSTRAP_HOST").value_or("");
  if (host.empty()) host = chooseLocalHost();

  UniqueId id;
  id.secret = options.secret ? *options.secret : randomSecret();
  id.job = options.job ? *options.job : randomJob();
  Socket listener = listenTcp(host, options.port);
  const SocketAddress bound = SocketAddress::local(listener.fd());
  id.host = bound.host();
  id.port = bound.port();
  LOOM_INFO("rendezvous server listening on {}", bound.toString());

  auto server =
      std::make_unique<RendezvousServer>(std::move(listener), id.secret, id.job, joinTimeout);
  std::thread([server = std::move(server)] { server->run(); }).detach();
  return id;
}

}  // namespace loom
