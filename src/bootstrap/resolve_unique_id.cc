// resolveUniqueId: for launchers that cannot ship loomGetUniqueId's bytes,
// every rank derives the same id from the environment, and rank 0 serves it.
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/secret.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/socket.h"
#include "core/wire.h"

namespace loom {
namespace {

// 32 hex digits: 128 bits, as much as the secret holds.
constexpr size_t kStrongSecretChars = 32;

// A numeric address for `host`, which may be a name (MASTER_ADDR often is).
// IPv4 is preferred because that is what clusters route.
std::string numericAddress(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    raise(ErrorCode::InvalidArgument, "cannot resolve rendezvous host '{}': {}", host,
          gai_strerror(rc));
  }
  std::string chosen;
  for (addrinfo* it = list; it != nullptr; it = it->ai_next) {
    SocketAddress address;
    std::memcpy(&address.storage, it->ai_addr, it->ai_addrlen);
    address.length = it->ai_addrlen;
    if (chosen.empty() || it->ai_family == AF_INET) chosen = address.host();
    if (it->ai_family == AF_INET) break;
  }
  freeaddrinfo(list);
  if (chosen.empty())
    raise(ErrorCode::InvalidArgument, "rendezvous host '{}' has no address", host);
  return chosen;
}

// The job key is no secret: other users of a cluster read it from squeue or
// ps. A secret derived from it keeps concurrent jobs apart, nothing more.
void warnAboutSecret(const LaunchEnv& env, const std::optional<std::string>& chosen) {
  if (env.rank != 0) return;  // once per job is loud enough
  if (!chosen) {
    LOOM_WARN(
        "the bootstrap secret is derived from the job key '{}', which other users of this machine "
        "or cluster can read: any of them could join this job. Set LOOM_SECRET to a random value "
        "in every rank's environment (docs/security.md), or launch with loomrun",
        env.jobKey);
  } else if (chosen->size() < kStrongSecretChars) {
    LOOM_WARN("LOOM_SECRET has {} characters; use at least {} random ones (docs/security.md)",
              chosen->size(), kStrongSecretChars);
  }
}

}  // namespace

UniqueId resolveUniqueId(const LaunchEnv& env) {
  if (env.id) return *env.id;
  // A single rank started by hand: nobody else derives this id, so it can
  // be a fresh one (random secret, any free port).
  if (env.launcher == "none" && !envString("LOOM_COMM_ID")) return startRendezvous();
  const bool fromCommId = envString("LOOM_COMM_ID").has_value();
  UniqueId id;
  id.host = numericAddress(env.masterHost.empty() ? "127.0.0.1" : env.masterHost);
  if (env.masterPort > 0) {
    // LOOM_COMM_ID names the rendezvous port itself; MASTER_PORT is torch's
    // store, so Loom takes the next one.
    id.port = static_cast<uint16_t>(fromCommId ? env.masterPort : env.masterPort + 1);
  } else {
    id.port = static_cast<uint16_t>(20000 + wire::fnv1a(env.jobKey) % 20000);
  }
  const std::optional<std::string> chosenSecret = envString("LOOM_SECRET");
  id.secret = derivedSecret(chosenSecret.value_or(env.jobKey));
  const std::string where = formatHostPort(id.host, id.port);
  // Without a job-wide key the address is all the ranks share.
  id.job = derivedJob(env.jobKeyShared ? env.jobKey : "rendezvous " + where);
  warnAboutSecret(env, chosenSecret);
  if (env.rank != 0) {
    LOOM_INFO("rank {}: rendezvous at {} (served by rank 0)", env.rank, where);
    return id;
  }

  RendezvousOptions options;
  options.port = id.port;
  options.secret = id.secret;
  options.job = id.job;
  options.bindHost = id.host;
  try {
    startRendezvous(options);
  } catch (const Error& first) {
    if (first.code() != ErrorCode::SystemError) throw;
    // The advertised address may not be local (NAT, an alias): listen on all
    // addresses of this family instead, at the same port.
    options.bindHost = id.host.find(':') != std::string::npos ? "::" : "0.0.0.0";
    LOOM_WARN("rank 0: cannot listen on {} ({}); serving the rendezvous on every address ({})",
              id.host, first.what(), options.bindHost);
    try {
      startRendezvous(options);
    } catch (const Error& second) {
      raise(ErrorCode::InvalidUsage,
            "rank 0 cannot serve the rendezvous at {} (from {}): {}; set LOOM_COMM_ID to a free "
            "host:port",
            where, fromCommId ? "LOOM_COMM_ID" : env.launcher, second.what());
    }
  }
  LOOM_INFO("rank 0: serving the rendezvous at {} for job '{}'", where, env.jobKey);
  return id;
}

}  // namespace loom
