// Bootstrap: how ranks find each other before any link exists.
//
// loomGetUniqueId starts a rendezvous server (a thread in the calling process)
// and returns its address plus a 128-bit random secret. Every rank connects,
// proves the secret without sending it (a MAC over the server's challenge;
// the server proves it back) and says (job, rank, nranks). The server then relays all-gathers
// for the life of the communicator: each rank sends a blob, and once all ranks
// sent theirs every rank receives all of them. It is small, centralised and
// only used at init/split/destroy, never on a collective's data path.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/peer_status.h"
#include "bootstrap/shrink_agreement.h"
#include "bootstrap/unique_id.h"
#include "core/deadline.h"

namespace loom {

struct RendezvousOptions {
  /// Address to bind; empty picks the interface that routes outward (or
  /// LOOM_SOCKET_IFNAME), falling back to loopback.
  std::string bindHost;
  uint16_t port = 0;  // 0: any free port
  /// Fixed secret and job (launchers without a way to ship the id, splits);
  /// unset: random.
  std::optional<std::array<uint8_t, 16>> secret;
  std::optional<uint64_t> job;
};

/// Starts the rendezvous server thread and describes it. The thread owns its
/// state and ends when every rank that joined has disconnected, or when no
/// complete set of ranks joined within LOOM_TIMEOUT.
UniqueId startRendezvous(const RendezvousOptions& options = {});

class Bootstrap {
 public:
  /// Connects to the server in `id` as `rank` of `nranks` and waits until all
  /// ranks have joined. Throws InvalidArgument for a malformed id, RemoteError
  /// if the server refuses or the deadline passes.
  static std::unique_ptr<Bootstrap> join(const UniqueId& id, int rank, int nranks,
                                         Deadline deadline,
                                         const std::atomic<bool>* abortFlag = nullptr);
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  /// Each rank contributes `mine` (at most 1 MiB); returns every rank's blob,
  /// indexed by rank. Collective: all ranks must call it in the same order.
  virtual std::vector<std::string> allGather(const std::string& mine, Deadline deadline) = 0;
  virtual void barrier(Deadline deadline) = 0;

  /// Non-blocking and cheap (one poll with zero timeout): throws
  /// Error(RemoteError, "... rank R ...") if the server reported that a rank
  /// disconnected without leave() — its process died or closed its sockets.
  /// Executors call it while they wait, so a dead peer is named within
  /// milliseconds instead of at LOOM_TIMEOUT.
  virtual void checkPeers() = 0;
  /// Publishes what this rank is doing, for peers' hang reports. Best effort
  /// and non-blocking: returns false (and sends nothing) when another thread
  /// holds the connection or it has failed. Callers report only when a wait
  /// got slow and when that call ends, so fast calls cost no system call.
  virtual bool reportStatus(const PeerStatus& mine) = 0;
  /// Every rank's last report, as the server knows it (indexed by rank). For
  /// the error path of a timed-out wait. Throws Error(RemoteError) if the
  /// server reports a failure or does not answer by `deadline`.
  virtual std::vector<PeerReport> queryStatuses(Deadline deadline) = 0;
  /// Asks the server to tell every rank that this rank revoked the
  /// communicator. `mismatch`: empty for loomCommRevoke; else this rank found
  /// ranks in different calls, and this is its error. Best effort and
  /// bounded (at most ~200 ms): a connection that is busy in another thread's
  /// round or broken tells nobody.
  virtual void revoke(std::string_view mismatch) = 0;
  /// The rank whose revoke the server announced, or -1. checkPeers throws
  /// Error(Revoked) once it has read the announcement; after a revoke on a
  /// mismatch, the first time Error(InvalidUsage) with the revoking rank's
  /// error, since the call then waiting is the one the ranks disagreed on.
  virtual int revokedBy() const = 0;
  /// The revoking rank's error if it revoked on a mismatch, else empty.
  virtual std::string revokedOnMismatch() const = 0;
  /// Asks the server to shrink the communicator (shrink_agreement.h) and
  /// waits for the verdict, which every asker of the round receives alike.
  /// Works after a peer failure, which fails rounds but not this: errors the
  /// server announced meanwhile are kept for later calls. Throws RemoteError
  /// if the server is gone or does not answer by `deadline`.
  virtual ShrinkVerdict agreeToShrink(const ShrinkRequest& request, Deadline deadline) = 0;
  /// Tells the server this rank leaves cleanly (communicator destroyed), so its
  /// disconnect is not reported to the others as a failure. `why`: the first
  /// error this rank's calls met, or empty; if this process runs the server,
  /// the others hear it with the news that the server is ending (cut to the
  /// protocol's bound).
  virtual void leave(std::string_view why) = 0;
};

}  // namespace loom
