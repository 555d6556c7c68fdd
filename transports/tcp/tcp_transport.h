// TCP links between hosts (or between processes anywhere, for tests).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "transports/link.h"
#include "transports/link_credentials.h"
#include "transports/tcp/tcp_wire.h"

namespace loom {

struct TcpConfig {
  size_t slotBytes = size_t{512} << 10;  // largest message
  int slots = 4;                         // messages in flight per direction
  int socketsPerPeer = 2;                // sockets per link: large messages are striped over them
  int channels = 1;                      // links per peer, each with its own sockets
};

/// A listening socket whose address ranks publish in their peer info.
class TcpListener {
 public:
  /// Binds to `host` (numeric address; empty: the interface chosen for
  /// bootstrap, or LOOM_SOCKET_IFNAME) on any free port.
  explicit TcpListener(const std::string& host);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  /// "host:port" ("[v6]:port" for IPv6).
  std::string address() const;
  int fd() const { return fd_; }
  /// True the first time a hello's nonce is seen here: a replayed hello (its
  /// MAC valid, its nonce not fresh) is refused for the listener's life.
  bool firstUse(const tcp::Nonce& nonce) { return nonces_.insert(nonce).second; }

 private:
  int fd_ = -1;
  std::string address_;
  std::set<tcp::Nonce> nonces_;
};

/// Connects a link to every rank in request.peers. Every rank of the set calls
/// this with the same credentials; for each pair the lower rank connects and
/// the higher accepts, and a handshake carries (commTag, rank) with a MAC keyed
/// by the credentials' key, so strays, strangers and replays are refused.
/// Returns config.channels links per peer, channel-major: link
/// c * peers.size() + i is channel c's link to peers[i].
std::vector<std::unique_ptr<Link>> connectTcpLinks(TcpListener& listener,
                                                   const ConnectRequest& request,
                                                   const TcpConfig& config);

}  // namespace loom
