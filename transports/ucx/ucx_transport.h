// UCX links: a Link over UCP tag matching, for networks UCX drives better than
// plain sockets (InfiniBand, RoCE; TCP and shared memory otherwise).
//
// Every rank owns one UcxWorker per communicator (a UCP context and worker),
// publishes address() in its peer info, and then connects links to the peers it
// needs with connectUcxLinks. UCX headers stay out of this header.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/deadline.h"
#include "transports/link.h"
#include "transports/link_credentials.h"

namespace loom {

namespace ucx {
class WorkerState;
}

struct UcxConfig {
  size_t slotBytes = size_t{512} << 10;  // largest message
  int slots = 4;                         // messages in flight per direction
  int channels = 1;                      // links per peer (they share its endpoint)
};

/// A UCP context and worker: the progress engine every UCX link of one
/// communicator shares. Links keep it alive, so it may be destroyed before them.
/// One thread at a time may use it and its links (UCS_THREAD_MODE_SERIALIZED).
class UcxWorker {
 public:
  /// UCX settings for this worker only, as UCX's environment variables name
  /// them with or without the UCX_ prefix ({"TLS", "rc,sm"}, {"NET_DEVICES",
  /// "mlx5_0:1"}); they override the environment. Throws Error(InvalidArgument)
  /// for a value UCX cannot parse (UCX only warns about unknown names),
  /// Error(SystemError) with UCX's reason if UCX cannot initialise.
  using Settings = std::vector<std::pair<std::string, std::string>>;
  explicit UcxWorker(const Settings& settings = {});
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  /// The worker's address, hex-encoded (printable, no separators), for peers to
  /// pass to connectUcxLinks.
  const std::string& address() const;

 private:
  friend std::vector<std::unique_ptr<Link>> connectUcxLinks(UcxWorker& worker,
                                                            const ConnectRequest& request,
                                                            const UcxConfig& config);

  std::shared_ptr<ucx::WorkerState> state_;
};

/// Connects a link to every rank in request.peers. Every rank of the set calls
/// this with the same credentials and `config.slotBytes`; each pair exchanges a
/// handshake carrying (commTag, rank) and a MAC with the credentials' key, and
/// a peer of another communicator is refused with RemoteError on both sides; a
/// hello without a valid MAC is ignored as a stray. The peer addresses are
/// UcxWorker::address() of each rank. Throws RemoteError naming the ranks not
/// heard from by the deadline, Aborted once *abortFlag is set. Returns
/// config.channels links per peer, channel-major: link c * peers.size() + i is
/// channel c's link to peers[i].
std::vector<std::unique_ptr<Link>> connectUcxLinks(UcxWorker& worker, const ConnectRequest& request,
                                                   const UcxConfig& config);

}  // namespace loom
