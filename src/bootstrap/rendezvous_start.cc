// startRendezvous: picks the address and secret, then hands a RendezvousServer
// to a detached thread that owns it until the job is done with it.
#include <sys/random.h>

#include <cerrno>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_server.h"
#include "bootstrap/wire.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace loom {
namespace {

std::array<uint8_t, 16> randomSecret() {
  std::array<uint8_t, 16> secret{};
  size_t filled = 0;
  while (filled < secret.size()) {
    const ssize_t n = getrandom(secret.data() + filled, secret.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      raiseErrno("getrandom for the bootstrap secret");
    }
    filled += static_cast<size_t>(n);
  }
  return secret;
}

// Launchers without a way to ship the id give every rank the same text (job
// key, LOOM_SECRET); all ranks must derive the same 16 bytes from it.
std::array<uint8_t, 16> derivedSecret(const std::string& text) {
  std::array<uint8_t, 16> secret{};
  wire::putU64(secret.data(), wire::fnv1a(text, wire::fnv1a("loom-secret-a")));
  wire::putU64(secret.data() + 8, wire::fnv1a(text, wire::fnv1a("loom-secret-b")));
  return secret;
}

}  // namespace

UniqueId startRendezvous(const RendezvousOptions& options) {
  const auto joinTimeout = std::chrono::seconds(envInt("LOOM_TIMEOUT", 300, 1, 7 * 86400));
  std::string host = options.bindHost;
  if (host.empty()) host = envString("LOOM_BOOTSTRAP_HOST").value_or("");
  if (host.empty()) host = chooseLocalHost();

  UniqueId id;
  id.secret = options.secret.empty() ? randomSecret() : derivedSecret(options.secret);
  Socket listener = listenTcp(host, options.port);
  id.host = SocketAddress::local(listener.fd()).host();
  id.port = SocketAddress::local(listener.fd()).port();
  LOOM_INFO("rendezvous server listening on {}", formatHostPort(id.host, id.port));

  auto server = std::make_unique<RendezvousServer>(std::move(listener), id.secret, joinTimeout);
  std::thread([server = std::move(server)] { server->run(); }).detach();
  return id;
}

}  // namespace loom
