#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "collectives/algorithms.h"
#include "collectives/executor/direct_executor.h"
#include "comm/comm.h"
#include "comm/comm_tuner.h"
#include "comm/network_links.h"
#include "core/env.h"
#include "core/log.h"
#include "core/socket.h"
#include "device_paths/device_direct.h"
#include "device_paths/device_walk.h"
#include "topology/host_summary.h"
#include "transports/shm/shared_buffer.h"
#include "tuner/network_channels.h"
#include "tuner/tuner_topology.h"

namespace loom {
namespace {

std::vector<PeerInfo> exchangePeerInfo(Comm& comm, Deadline deadline) {
  PeerInfo mine;
  mine.hostId = PeerInfo::localHostId();
  mine.pid = static_cast<int>(getpid());
  mine.tcpAddress = comm.tcpListener->address();
  mine.configSignature = comm.config.signature();
  const auto blobs = comm.bootstrap->allGather(mine.serialize(), deadline);
  std::vector<PeerInfo> peers;
  peers.reserve(blobs.size());
  for (size_t r = 0; r < blobs.size(); ++r) {
    peers.push_back(PeerInfo::deserialize(blobs[r], static_cast<int>(r)));
  }
  for (size_t r = 0; r < peers.size(); ++r) {
    if (peers[r].configSignature != mine.configSignature) {
      raise(ErrorCode::InvalidUsage,
            "rank {} has settings '{}' but rank {} has '{}': set the same LOOM_* variables on "
            "every rank",
            r, peers[r].configSignature, comm.rank, mine.configSignature);
    }
  }
  return peers;
}

/// This rank's segment, or nullptr when /dev/shm cannot hold it (containers
/// often mount a 64 MiB /dev/shm): the host then falls back to tcp.
std::unique_ptr<ShmDomain> tryCreateShm(Comm& comm) {
  try {
    return std::make_unique<ShmDomain>(comm.id.tag() ^ 0x5348ULL, comm.rank, comm.nranks,
                                       comm.config.shm);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::SystemError) throw;
    LOOM_WARN("rank {}: shared memory unavailable, ranks on this host fall back to tcp: {}",
              comm.rank, e.what());
    return nullptr;
  }
}

/// Link sets to peers over the network, the same on every rank: LOOM_NCHANNELS,
/// else as many as it takes to fill the network (tuner/network_channels.h).
int networkChannelCount(const Comm& comm) {
  if (comm.config.channels) return std::min(*comm.config.channels, kMaxPlanChannels);
  if (comm.tuner == nullptr) return 1;
  return tuner::channelsToFill(comm.tuner->networkGBps, comm.tuner->connectionGBps,
                               kMaxPlanChannels);
}

void connectLinks(Comm& comm, Deadline deadline) {
  const std::string& myHost = comm.peers[comm.rank].hostId;
  comm.shm = tryCreateShm(comm);
  // A host uses shared memory only if every rank on it created its segment;
  // every rank of the host sees the same answers, so they agree.
  const auto shmReady = comm.bootstrap->allGather(comm.shm ? "1" : "0", deadline);
  bool hostShm = true;
  for (int r = 0; r < comm.nranks; ++r) {
    if (comm.peers[r].hostId == myHost && shmReady[r] != "1") hostShm = false;
  }
  if (!hostShm) comm.shm.reset();
  if (comm.shm) comm.revokedBy = &comm.shm->headerOf(comm.rank).status.revokedBy;
  const bool shmLinks = hostShm && comm.config.transport != TransportChoice::Tcp;

  std::vector<int> localPeers;
  std::vector<int> localTcpPeers;  // same host, but no shared memory
  std::vector<int> remotePeers;
  for (int r = 0; r < comm.nranks; ++r) {
    if (r == comm.rank) continue;
    const bool sameHost = comm.peers[r].hostId == myHost;
    if (sameHost) localPeers.push_back(r);
    if (sameHost && !shmLinks) localTcpPeers.push_back(r);
    if (!sameHost) remotePeers.push_back(r);
  }
  comm.allLocal = shmLinks && static_cast<int>(localPeers.size()) == comm.nranks - 1;

  // Segments are mapped among same-host ranks even when links use tcp, because
  // the doorbell and the status words live there. Every rank takes part in the
  // barriers, since they are comm-wide.
  comm.bootstrap->barrier(deadline);
  if (comm.shm) comm.shm->attach(localPeers);
  comm.bootstrap->barrier(deadline);
  if (comm.shm) comm.shm->unlinkOwn();

  const auto nranks = static_cast<size_t>(comm.nranks);
  comm.links.resize(nranks);
  comm.networkChannels = networkChannelCount(comm);
  comm.channelLinks.assign(static_cast<size_t>(comm.networkChannels),
                           std::vector<Link*>(nranks, nullptr));
  // `made` holds the same number of links per peer, channel by channel.
  auto keep = [&](const std::vector<int>& peers, std::vector<std::unique_ptr<Link>> made) {
    for (size_t k = 0; k < made.size(); ++k) {
      const size_t channel = k / peers.size();
      const auto peer = static_cast<size_t>(peers[k % peers.size()]);
      comm.networkLinks.push_back(made[k].get());
      comm.channelLinks[channel][peer] = made[k].get();
      if (channel == 0) {
        comm.links[peer] = std::move(made[k]);
      } else {
        comm.moreChannelLinks.push_back(std::move(made[k]));
      }
    }
  };
  if (!localTcpPeers.empty()) {
    keep(localTcpPeers, connectTcpPeers(comm, localTcpPeers, deadline));
  }
  // Collective when ranks span hosts (every rank then has remote peers).
  if (!remotePeers.empty()) keep(remotePeers, connectNetworkLinks(comm, remotePeers, deadline));
  // What was connected, not what was asked: no network peer means one set,
  // and ibverbs may have connected fewer than the others would.
  if (remotePeers.empty() && localTcpPeers.empty()) comm.networkChannels = 1;
  comm.channelLinks.resize(static_cast<size_t>(comm.networkChannels));
  if (shmLinks) {
    for (int peer : localPeers) {
      comm.links[static_cast<size_t>(peer)] = comm.shm->makeLink(peer);
      comm.channelLinks[0][static_cast<size_t>(peer)] = comm.links[static_cast<size_t>(peer)].get();
    }
  }
  if (comm.allLocal) {
    for (int r = 0; r < comm.nranks; ++r) comm.arenas.push_back(comm.shm->arena(r));
  }
  // The leading channels whose links reach every peer (the same on every
  // rank: each pair of ranks connected the same sets).
  comm.ringChannels = 0;
  for (const auto& links : comm.channelLinks) {
    for (size_t p = 0; p < nranks; ++p) {
      if (p != static_cast<size_t>(comm.rank) && links[p] == nullptr) return;
    }
    ++comm.ringChannels;
  }
}

/// Whether every rank can map the other processes' loomMemAlloc buffers:
/// each rank allocates a small one, the ranks trade where it is, and each
/// maps every peer's in another process. `why` says why not.
bool canMapPeersSharedBuffers(Comm& comm, const PeerMemory& peers, const void* probe,
                              Deadline deadline, std::string* why) {
  const auto* header = probe == nullptr ? nullptr : findSharedBuffer(probe, 0);
  const std::string mine = header == nullptr ? "" : fmt::format("{} {}", header->fd, header->inode);
  const auto all = comm.bootstrap->allGather(mine, deadline);
  bool ok = true;
  for (int r = 0; r < comm.nranks && ok; ++r) {
    if (peers.sameProcess(r, comm.rank)) continue;
    SharedFileRef ref;
    if (std::sscanf(all[static_cast<size_t>(r)].c_str(), "%" SCNd32 " %" SCNu64, &ref.fd,
                    &ref.inode) != 2) {
      if (why->empty()) *why = fmt::format("rank {} has no shared buffer to map", r);
      return false;
    }
    ok = peers.canMap(r, ref, why);
  }
  return ok;
}

struct FreeSharedBuffer {
  void operator()(void* buffer) const { freeSharedBuffer(buffer); }
};

/// How the direct algorithm may read ranks' buffers in place, decided here
/// once by all ranks alike. Each rank tries to read a known word of every
/// peer: if every rank can, single-copy serves any buffers. Else, if every
/// rank can map the other processes' loomMemAlloc buffers, single-copy
/// serves those where they are registered. Ranks on several hosts, or
/// LOOM_SINGLE_COPY=0, skip it on every rank (both are the same for all
/// ranks), so they pay no agreement.
void setUpSingleCopy(Comm& comm, Deadline deadline) {
  if (!comm.allLocal || !comm.config.singleCopy || comm.nranks == 1) return;
  std::vector<int> pids;
  std::vector<uint64_t> probes;
  for (int r = 0; r < comm.nranks; ++r) {
    pids.push_back(comm.peers[r].pid);
    probes.push_back(comm.arenas[r].header->ownerAddress);
  }
  auto peers = std::make_unique<PeerMemory>(comm.rank, pids, comm.config.crossMemory);
  std::string why;
  peers->probe(probes, kShmMagic, &why);
  if (!peers->everyPeerReadable() && why.empty()) {
    why = "ranks in other processes are read in place only with LOOM_CMA=1";
  }
  const bool oneProcess = peers->everyRankInProcessOf(0);
  std::string mapWhy;
  // Kept until every rank has tried to map it: the agreement below.
  std::unique_ptr<void, FreeSharedBuffer> probe;
  if (!oneProcess) {
    try {
      probe.reset(allocateSharedBuffer(0));
    } catch (const Error& e) {
      // Still takes part in the exchange (as unmappable), so no peer waits.
      mapWhy = fmt::format("rank {} cannot allocate a shared buffer: {}", comm.rank, e.what());
    }
  }
  const bool maps =
      oneProcess ||
      (canMapPeersSharedBuffers(comm, *peers, probe.get(), deadline, &mapWhy) && probe != nullptr);
  // Two flags and why not: every peer readable whatever its buffers (threads,
  // cross-memory attach), and every other process's shared buffers mappable.
  const bool readable = peers->everyPeerReadable();
  const std::string verdict = std::string(readable ? "1" : "0") + (maps ? "1" : "0") + ":" +
                              (readable ? "" : why) + (maps ? "" : "; " + mapWhy);
  const auto all = comm.bootstrap->allGather(verdict, deadline);
  probe.reset();
  const auto firstWithout = [&](size_t flag) {
    return std::find_if(all.begin(), all.end(),
                        [&](const std::string& a) { return a[flag] != '1'; });
  };
  const auto unreadable = firstWithout(0);
  const auto unmappable = firstWithout(1);
  if (unreadable != all.end() && unmappable != all.end()) {
    if (comm.rank == 0) {
      LOOM_INFO(
          "large messages copy through the shared arena: rank {} cannot read its peers' "
          "buffers in place ({})",
          unreadable - all.begin(), unreadable->substr(3));
    }
    return;
  }
  comm.peersReadable = unreadable == all.end();
  comm.mapsSharedBuffers = unmappable == all.end();
  comm.peerMemory = std::move(peers);
  comm.singleCopyScratch = PageAlignedBuffer(2 * kSingleCopyBlockBytes);
  if (comm.rank == 0) {
    bool crossProcess = false;
    for (int r = 0; r < comm.nranks; ++r) {
      crossProcess |= comm.peerMemory->access(r) == PeerAccess::CrossMemory;
    }
    if (!comm.peersReadable) {
      LOOM_INFO(
          "messages of {} B and more read peers' buffers in place where they are loomMemAlloc "
          "buffers registered with the communicator; others copy through the shared arena "
          "(rank {}: {})",
          comm.config.singleCopyMinBytes, unreadable - all.begin(), unreadable->substr(3));
    } else {
      LOOM_INFO("messages of {} B and more read peers' buffers in place ({})",
                comm.config.singleCopyMinBytes,
                crossProcess ? "cross-memory attach between processes" : "threads of one process");
    }
  }
}

}  // namespace

std::unique_ptr<Comm> initComm(const UniqueId& id, int nranks, int rank,
                               const CommOverrides& overrides) {
  if (nranks < 1) raise(ErrorCode::InvalidArgument, "nranks={} must be at least 1", nranks);
  if (rank < 0 || rank >= nranks) {
    raise(ErrorCode::InvalidArgument, "rank={} is outside [0, nranks={})", rank, nranks);
  }
  auto comm = std::make_unique<Comm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->id = id;
  comm->config = CommConfig::fromEnvironment();
  for (int slot = 0; slot < kDirectCollectives; ++slot) {
    comm->arenaStores[static_cast<size_t>(slot)] =
        MeasuredChoice(comm->config.arenaStores, arenaStoreLag(slot));
  }
  comm->twoRankSum = MeasuredChoice(comm->config.twoRankSum);
  if (overrides.timeout) comm->config.timeout = *overrides.timeout;
  const Deadline deadline = Deadline::after(comm->config.timeout);

  comm->bootstrap = Bootstrap::join(id, rank, nranks, deadline, &comm->aborted);
  // The interface that reaches the rendezvous reaches the peers: loopback
  // when the job is on one host (its rendezvous is), nothing external then.
  comm->tcpListener = std::make_unique<TcpListener>(chooseLocalHost(id.host));
  comm->peers = exchangePeerInfo(*comm, deadline);
  // The model first: it says how many link sets fill the network.
  setUpTuner(*comm);
  connectLinks(*comm, deadline);
  setUpSingleCopy(*comm, deadline);
  WaitPolicy& wait = comm->waitPolicy;
  wait.doorbell = comm->shm ? &comm->shm->myDoorbell() : nullptr;
  wait.abortFlag = &comm->aborted;
  wait.timeout = comm->config.timeout;
  wait.spinMicros = comm->config.spinMicros;
  // More ranks than cores on this host: a spinning rank only delays the peer
  // that shares its core, so go straight to yielding unless told otherwise.
  const long localRanks = static_cast<long>(
      std::count_if(comm->peers.begin(), comm->peers.end(),
                    [&](const PeerInfo& p) { return p.hostId == comm->peers[comm->rank].hostId; }));
  if (!envString("LOOM_SPIN_US") && localRanks > sysconf(_SC_NPROCESSORS_ONLN)) {
    wait.spinMicros = 0;
  }
  wait.yieldMicros = comm->config.yieldMicros;
  wait.networkLinks = comm->networkLinks;
  Comm* self = comm.get();
  wait.revokedBy = comm->revokedBy;
  wait.checkPeers = [self] {
    reportSlowWait(*self);
    checkLocalPeersGaveUp(*self);
    try {
      self->bootstrap->checkPeers();
    } catch (const Error& e) {
      // A revoke on a mismatch surfaces once as InvalidUsage.
      if (const int by = self->bootstrap->revokedBy(); by >= 0) markRevoked(*self, by);
      throw;
    }
  };
  wait.peerStates = [self] { return describePeerStates(*self); };
  if (comm->config.channels && *comm->config.channels > 1 && comm->ringChannels < 2 &&
      comm->networkChannels < 2 && comm->rank == 0) {
    LOOM_INFO(
        "LOOM_NCHANNELS={}: host buffers use channels only over tcp/ucx/ibverbs links; these "
        "ranks share memory, so their host calls run one (the plan-walking kernel, "
        "LOOM_CUDA_PATH=kernel, runs them all)",
        *comm->config.channels);
  }
  prepareDeviceWalk(*comm);
  comm->bootstrap->barrier(deadline);
  if (logLevel() >= LogLevel::Info) {
    LOOM_INFO("rank {}/{} ready: {}, slice {} B; host: {}", rank, nranks,
              comm->allLocal ? "all ranks on this host (shm)" : "tcp links to other hosts",
              comm->config.sliceBytes(), detectHostSummary().toString());
  }
  return comm;
}

Comm& checkedComm(loomComm* comm) {
  if (comm == nullptr) raise(ErrorCode::InvalidArgument, "comm is NULL");
  if (comm->magic != Comm::kAliveMagic) {
    raise(ErrorCode::InvalidUsage, "comm {} was destroyed or is not a Loom communicator",
          static_cast<const void*>(comm));
  }
  return *comm;
}

}  // namespace loom

namespace loom {

ActiveCall::ActiveCall(Comm& comm, Revoked revoked) : comm_(comm) {
  comm_.activeCalls.fetch_add(1);
  if (comm_.aborted.load()) {
    comm_.activeCalls.fetch_sub(1);
    raise(ErrorCode::Aborted, "communicator was aborted (loomCommAbort)");
  }
  if (const int32_t by = comm_.revokedBy->load(std::memory_order_acquire);
      by != 0 && revoked == Revoked::Refused) {
    comm_.activeCalls.fetch_sub(1);
    raiseRevoked(comm_, by - 1);
  }
}

}  // namespace loom

loomComm::~loomComm() {
  // An aborted rank does not say goodbye: its peers learn of it as a failure
  // within milliseconds instead of waiting for LOOM_TIMEOUT.
  if (!bootstrap || !leaveCleanly) return;
  try {
    bootstrap->leave(firstFailure);
  } catch (const std::exception& e) {
    LOOM_INFO("rank {}: leaving the rendezvous failed: {}", rank, e.what());
  }
}

std::shared_ptr<const std::vector<loom::RankPlan>> loomComm::phasedPlan(loom::Algorithm algorithm,
                                                                        size_t count, bool inPlace,
                                                                        int channels) {
  const PhasedKey key{static_cast<int>(algorithm), count, inPlace, channels};
  auto it = phasedCache.find(key);
  if (it != phasedCache.end()) return it->second;
  if (phasedCache.size() > 1024) phasedCache.clear();
  auto made = std::make_shared<const std::vector<loom::RankPlan>>(
      algorithm == loom::Algorithm::HostTree
          ? loom::hostTreeAllReduce(hostGroups, rank, count, inPlace)
          : loom::hierarchicalAllReduce(hostGroups, rank, count, channels));
  phasedCache.emplace(key, made);
  return made;
}

std::shared_ptr<const loom::RankPlan> loomComm::plan(const loom::PlanRequest& req) {
  const PlanKey key{static_cast<int>(req.collective),
                    static_cast<int>(req.algorithm),
                    req.count,
                    req.root,
                    req.inPlace,
                    req.channels};
  auto it = planCache.find(key);
  if (it != planCache.end()) return it->second;
  // Bounded: a training loop uses few shapes; a sweep would otherwise grow it forever.
  if (planCache.size() > 1024) planCache.clear();
  // All-reduce buffers do not depend on the rank, so its ring and tree plans
  // can run in the topology's order: made for this rank's position, placed.
  const bool placed =
      !ringOrder.empty() && req.collective == loom::Collective::AllReduce &&
      (req.algorithm == loom::Algorithm::Ring || req.algorithm == loom::Algorithm::Tree);
  std::shared_ptr<const loom::RankPlan> made;
  if (placed) {
    loom::PlanRequest atPosition = req;
    atPosition.rank = static_cast<int>(std::find(ringOrder.begin(), ringOrder.end(), req.rank) -
                                       ringOrder.begin());
    made = std::make_shared<const loom::RankPlan>(
        loom::placePlan(loom::makePlan(atPosition), ringOrder));
  } else {
    made = std::make_shared<const loom::RankPlan>(loom::makePlan(req));
  }
  planCache.emplace(key, made);
  return made;
}
