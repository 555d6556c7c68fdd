// The communicator: everything one rank owns for one group of ranks. All
// mutable state of the library lives here (or in a call's stack), never in
// globals.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "collectives/algorithms.h"
#include "collectives/executor/direct_executor.h"
#include "collectives/executor/waiter.h"
#include "collectives/plan.h"
#include "comm/buffer_registry.h"
#include "comm/config.h"
#include "comm/peer_info.h"
#include "core/error.h"
#include "core/page_buffer.h"
#include "device/driver_watch.h"
#include "transports/link.h"
#include "transports/shm/peer_memory.h"
#include "transports/shm/shm_domain.h"
#include "transports/tcp/tcp_transport.h"

namespace loom::tuner {
struct TunerTopology;  // tuner/tuner_topology.h
}
namespace loom {
class UcxWorker;            // transports/ucx/ucx_transport.h (UCX builds only)
struct DeviceDirectEvents;  // device_paths/device_direct.h
struct DeviceWalkState;     // device_paths/device_walk.h
}  // namespace loom

namespace loom {
/// Traffic counters (loomCommGetStats). Written only by the thread running the
/// communicator's calls; atomic so another thread may read them at any time.
struct CommStats {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> bytesSent{0};          // updated as executors finish
  std::atomic<uint64_t> lastCallBytesSent{0};  // set when a call completes
  std::atomic<uint64_t> compressedCalls{0};
  std::atomic<uint64_t> compressedInputBytes{0};
  std::atomic<uint64_t> agreements{0};  // host exchanges of Loom's own (exchange_values.h)
  void addSent(uint64_t bytes) { add(bytesSent, bytes); }
  /// Only the thread making a call writes the counters; readers
  /// (loomCommGetStats) only load them. So a load and a store suffice, where a
  /// locked add would cost an 8-byte all-reduce a few percent.
  static void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};
}  // namespace loom

struct loomComm {
  static constexpr uint64_t kAliveMagic = 0x4c4f4f4d434f4d4dULL;  // "LOOMCOMM"

  uint64_t magic = kAliveMagic;
  int rank = 0;
  int nranks = 1;
  loom::UniqueId id;
  loom::CommConfig config;
  std::unique_ptr<loom::Bootstrap> bootstrap;
  std::vector<loom::PeerInfo> peers;
  bool allLocal = true;  // every rank on this host, linked by shm
  /// Set when the call in progress found a peer in another call; the call's
  /// end then marks its failure as one that local peers stop waiting for at once.
  bool callMismatched = false;
  /// What this rank tells the other members in loomCommGrow, once it has
  /// started the new ranks' rendezvous (loomCommGetUniqueId): salt, then the
  /// id without its secret. Empty otherwise.
  std::string growOffer;

  std::unique_ptr<loom::TcpListener> tcpListener;
  /// The UCX progress engine when LOOM_NET=ucx (links keep it alive too).
  std::shared_ptr<loom::UcxWorker> ucxWorker;
  std::unique_ptr<loom::ShmDomain> shm;
  std::vector<std::unique_ptr<loom::Link>> links;  // channel 0, by peer; null for self
  /// Links of channels 1.. to the peers reached over tcp, ucx or ibverbs.
  std::vector<std::unique_ptr<loom::Link>> moreChannelLinks;
  /// channelLinks[c][p]: channel c's link to rank p, for executors. Channel 0
  /// reaches every peer; the others only peers over the network.
  std::vector<std::vector<loom::Link*>> channelLinks;
  int networkChannels = 1;  ///< link sets to every peer over the network
  int ringChannels = 1;     ///< link sets that reach every peer: a flat ring may use them all
  std::vector<loom::Link*> networkLinks;  // links that need progress() calls
  std::vector<loom::ArenaView> arenas;    // every rank's direct arena (one host only)
  /// Reads every local rank's buffers in place, for single-copy direct
  /// rounds; null where some rank cannot be read (then the arena serves).
  std::unique_ptr<loom::PeerMemory> peerMemory;
  /// Whether peerMemory reads every rank's buffers, wherever they are: else
  /// only loomMemAlloc buffers registered here are read in place by ranks in
  /// other processes (DirectOptions::peersReadable).
  bool peersReadable = true;
  /// Every rank can map the other processes' loomMemAlloc buffers (probed at
  /// creation), so registered ones are offered to peers.
  bool mapsSharedBuffers = false;
  /// Where !peersReadable: what single-copy calls found of the ranks'
  /// buffers, one state per direct collective (directSlot).
  std::array<loom::SharedBuffersState, loom::kDirectCollectives> sharedBuffers;
  /// loomCommRegister's buffers.
  loom::BufferRegistry registry;
  /// The single-copy reduction's blocks: page-aligned, because the kernel's
  /// cross-process copy into an unaligned destination runs at half speed.
  loom::PageAlignedBuffer singleCopyScratch;
  loom::WaitPolicy waitPolicy;  // how this rank's waits behave
  /// The tuner's model when ranks span hosts (comm_tuner.cc); null on one host.
  std::unique_ptr<loom::tuner::TunerTopology> tuner;
  /// Ring position p of all-reduce plans runs on rank ringOrder[p] (the
  /// topology search's ring, one crossing per host); empty: position = rank.
  std::vector<int> ringOrder;
  /// Ranks grouped by host, each host's ranks in ring order (set with the
  /// tuner when ranks span hosts; empty on one host), for the hierarchical
  /// and host-tree all-reduces.
  loom::HostGroups hostGroups;

  std::atomic<bool> aborted{false};
  /// False after abort or revoke: peers should hear of it as a failure.
  std::atomic<bool> leaveCleanly{true};
  /// The first error a call on this communicator met because of a peer
  /// (RemoteError or Revoked), or empty: told to the rendezvous when this rank
  /// leaves, so that if its process ran the server the others hear which rank
  /// failed first rather than only that this one left. Written by the
  /// thread running the calls, read at destruction.
  std::string firstFailure;
  /// The revoking rank + 1, 0 while not revoked: this rank's status word in
  /// shared memory when there is one (local peers write it), else ownRevoked.
  std::atomic<int32_t>* revokedBy = &ownRevoked;
  std::atomic<int32_t> ownRevoked{0};
  /// This rank revoked it on finding ranks in different calls (revokeOnMismatch).
  bool revokedOnMismatch = false;
  std::atomic<int> asyncError{0};  // a loomResult_t
  std::atomic<int> activeCalls{0};
  loom::CommStats stats;

  /// How each direct collective writes its arena rounds (LOOM_ARENA_STORES),
  /// by directSlot, learnt across calls.
  std::array<loom::MeasuredChoice, loom::kDirectCollectives> arenaStores;
  /// How two ranks run a single-copy all-reduce out of place (LOOM_TWO_RANK_SUM).
  loom::MeasuredChoice twoRankSum;
  uint64_t directRound = 0;      // rounds of the direct algorithm, equal on all ranks
  uint64_t collectiveCount = 0;  // collectives issued, for error messages
  uint64_t compressedCalls = 0;  // stochastic-rounding counter, equal on all ranks
  /// The call this thread is in, for peers on other hosts (peer_states.cc):
  /// sent to the rendezvous only once one of its waits got slow.
  loom::PeerStatus callStatus;
  bool callStatusReported = false;
  /// Buffers of the compressed collectives, kept between calls: allocating
  /// (and page-faulting) message-sized buffers per call costs more than the codec.
  struct CompressionScratch {
    std::vector<uint8_t> outgoing, incoming, gathered;
    std::vector<float> sum, compensated, decoded;
  } compressionScratch;

  using PlanKey = std::tuple<int, int, size_t, int, bool, int>;
  std::map<PlanKey, std::shared_ptr<const loom::RankPlan>> planCache;
  using PhasedKey = std::tuple<int, size_t, bool, int>;
  std::map<PhasedKey, std::shared_ptr<const std::vector<loom::RankPlan>>> phasedCache;
  /// (collective, algorithm, channels) choices already logged at INFO.
  std::set<std::tuple<loom::Collective, loom::Algorithm, int>> announcedChoices;
  /// Ordering events of the direct device path (device_paths/device_direct.h).
  std::unique_ptr<loom::DeviceDirectEvents> deviceEvents;
  /// FIFOs and program memory of the plan-walking kernel (device_paths/device_walk.h).
  std::unique_ptr<loom::DeviceWalkState> deviceWalk;
  /// Guards replacing deviceWalk against loomCommGetAsyncError, which reads
  /// its statuses from another thread (a framework's watchdog).
  std::mutex deviceWalkMutex;
  /// Whether every rank could run the plan-walking kernel when the
  /// communicator was made (prepareDeviceWalk); -1 off the kernel path.
  int deviceWalkCapable = -1;
  /// Whether two ranks of one process walk on one device, whose kernels can
  /// wait behind each other depending on the streams of each call: their
  /// device calls agree on a path call by call (prepareDeviceWalk;
  /// device_walk.h). Ranks of one process on devices of their own decide
  /// alone, as ranks in processes of their own do.
  bool deviceCallsAgree = false;
  /// Whether CUDA is loaded, answered per call without a system call; a cache,
  /// so validating a call (on a const communicator) may refresh it.
  mutable loom::device::DriverWatch driverWatch;
  /// Whether rank 0 logged that too many ranks share a device for the kernel path.
  std::atomic<bool> announcedCrowding{false};

  loomComm() = default;
  loomComm(const loomComm&) = delete;
  loomComm& operator=(const loomComm&) = delete;
  /// Tells the rendezvous this rank leaves cleanly, so peers do not take the
  /// closed connection for a crash.
  ~loomComm();

  /// The plan for `req`, built once per (collective, algorithm, count, root,
  /// in-place, channels).
  std::shared_ptr<const loom::RankPlan> plan(const loom::PlanRequest& req);
  /// The phases of a hierarchical or host-tree all-reduce of `count` elements
  /// over hostGroups (the hierarchical one's cross-host phase on `channels`),
  /// built once per (algorithm, count, in-place, channels).
  std::shared_ptr<const std::vector<loom::RankPlan>> phasedPlan(loom::Algorithm algorithm,
                                                                size_t count, bool inPlace,
                                                                int channels);
};

namespace loom {

using Comm = ::loomComm;

/// Creates and connects a communicator (collective over the ranks of `id`).
/// Settings a caller gives one communicator instead of the environment.
struct CommOverrides {
  std::optional<std::chrono::milliseconds> timeout;  ///< instead of LOOM_TIMEOUT
};

std::unique_ptr<Comm> initComm(const UniqueId& id, int nranks, int rank,
                               const CommOverrides& overrides = {});
/// Splits `parent` (collective over parent's ranks); nullptr for `color` < 0.
std::unique_ptr<Comm> splitComm(Comm& parent, int color, int key);
/// loomCommGetUniqueId: starts the rendezvous new ranks grow `comm` through,
/// and returns its id, secret included (comm_grow.cc).
UniqueId startGrowRendezvous(Comm& comm);
/// loomCommGrow on a member of `parent` (collective over its ranks).
std::unique_ptr<Comm> growComm(Comm& parent, int nranks);
/// loomCommGrow on a new rank.
std::unique_ptr<Comm> joinGrownComm(const UniqueId& id, int nranks, int rank);
/// Shrinks `parent` to the ranks the survivors agree on (comm_shrink.cc).
std::unique_ptr<Comm> shrinkComm(Comm& parent, std::span<const int> exclude, int flags);
/// Throws InvalidArgument/InvalidUsage when `comm` is null or destroyed.
Comm& checkedComm(loomComm* comm);

/// Marks `comm` revoked by `byRank` on this rank (comm_revoke.cc).
void markRevoked(Comm& comm, int byRank);
/// loomCommRevoke: marks it here and on every rank of this host, and has the
/// rendezvous tell the others. Does not wait for anything.
void revokeComm(Comm& comm);
/// A call of this rank found ranks in different calls (`error` says which).
/// Where ranks span hosts it revokes the communicator through the rendezvous,
/// so that ranks on other hosts, which cannot read this rank's status, stop
/// at once instead of at their deadline. Ranks of this host learn of the
/// mismatch from that status (checkLocalPeersGaveUp), as on one host.
void revokeOnMismatch(Comm& comm, const std::string& error);
/// Error(Revoked) naming the revoking rank.
[[noreturn]] void raiseRevoked(const Comm& comm, int byRank);

/// Counts a call in flight so loomCommAbort can wait for it to leave before
/// freeing the communicator. Throws Error(Aborted) on an aborted comm, and
/// Error(Revoked) on a revoked one.
class ActiveCall {
 public:
  enum class Revoked { Refused, Allowed };
  explicit ActiveCall(Comm& comm, Revoked revoked = Revoked::Refused);
  ~ActiveCall() { comm_.activeCalls.fetch_sub(1); }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  Comm& comm_;
};

/// "rank 1 in AllReduce #41 (1024 elements); rank 2 not in a call, 40 collectives
/// done; ...": ranks on this host from shared memory, others from the rendezvous.
std::string describePeerStates(Comm& comm);

/// Rethrows `seen` (a RemoteError) led by its first cause when the rendezvous
/// names one within a short grace: a link that closed is often a peer that
/// failed because another rank died first, and that rank is the one to name.
[[noreturn]] void raiseFirstCause(Comm& comm, const Error& seen);

/// Throws RemoteError when a peer on this host already failed the call this
/// rank is in (checked while a wait idles, with the bootstrap's news).
void checkLocalPeersGaveUp(Comm& comm);

/// Called while a wait idles (before Bootstrap::checkPeers): the first time
/// in a call, publishes this rank's call to the rendezvous when some peers are
/// on other hosts, so their hang reports can say what this rank is doing.
void reportSlowWait(Comm& comm);

struct Operation;  // comm/operation.h

/// "AllReduce of 512 float32 elements (sum)", "Broadcast of 8 int32 elements, root 1".
std::string describeCallShape(Collective collective, size_t count, DataType type, ReduceOp op,
                              int root);
/// What rank r (on this host) says it is in, for an error that names a
/// peer's call: "is in #5: AllReduce of 512 float32 elements (sum)".
std::string describeLocalCall(Comm& comm, int r);

/// Marks this rank busy in `op` (a group's first operation) for peers' hang
/// and mismatch reports, until destroyed. A scope left without succeeded()
/// records the call as failed.
class StatusScope {
 public:
  StatusScope(Comm& comm, const Operation& op);
  ~StatusScope();
  /// The call completed. Said explicitly: asking std::uncaught_exceptions()
  /// instead costs a thread-local lookup on every call.
  void succeeded() { succeeded_ = true; }
  StatusScope(const StatusScope&) = delete;
  StatusScope& operator=(const StatusScope&) = delete;

 private:
  Comm& comm_;
  RankStatus* status_;  // this rank's status in shared memory; null without shm
  bool succeeded_ = false;
};

}  // namespace loom
