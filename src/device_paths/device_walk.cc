#include "device_paths/device_walk.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collectives/algorithms.h"
#include "compressed/device_walk_compressed.h"
#include "core/log.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"
#include "device/device_scope.h"
#include "device_paths/device_walk_parts.h"
#include "device_paths/exchange_values.h"
#include "loom/loom.h"

namespace loom {
namespace {

using device::CopyKind;

/// What a rank says before a call when some ranks share a process: whether
/// it can walk on the device, and on which stream.
struct Offer {
  int32_t usable = 0;
  int32_t device = -1;
  uint64_t stream = 0;       // ranks of one process must not share one
  int32_t failed = 0;        // this rank's previous walk failed
  int32_t streamQueues = 0;  // this process's hardware queues per device (streamQueues())
};

/// Collectives one launch walks at most, where the group and the element
/// types allow (the program slots are sized for them).
constexpr size_t kFusedCalls = 16;

/// Whether every rank had a runtime, a device and the kernels when the
/// communicator was made (prepareDeviceWalk, all ranks alike).
bool possible(const Comm& comm) { return comm.deviceWalkCapable == 1; }

/// Whether the kernel path runs `op` itself, from the call alone: device
/// buffers, and a compressed form the kernels run.
bool walkable(const Comm& comm, const Operation& op) {
  return op.onDevice && (op.codec.kind == CodecKind::None || walksCompressed(comm, op));
}

/// A group's collectives walk one call after another on one stream, so
/// every one of them must be walkable, on one device and one stream.
Offer offerFor(const Comm& comm, std::span<const Operation> ops) {
  Offer offer;
  // A channel keeps the counters of at most kMaxConnections peers (all-to-all
  // talks to every rank).
  if (comm.nranks > static_cast<int>(walk::kMaxConnections) || !canWalkHere()) return offer;
  const int device = deviceOf(ops.front());
  if (device < 0) return offer;
  for (const Operation& op : ops) {
    if (!walkable(comm, op) || op.stream != ops.front().stream || deviceOf(op) != device) {
      return offer;
    }
  }
  offer.usable = 1;
  offer.device = device;
  offer.streamQueues = streamQueues();
  offer.stream = reinterpret_cast<uintptr_t>(ops.front().stream);
  return offer;
}

/// Every rank's device and hardware queues, as its offer says.
RankDevices devicesOf(const std::vector<Offer>& offers) {
  RankDevices where;
  for (const Offer& o : offers) {
    where.devices.push_back(o.device);
    where.queues.push_back(o.streamQueues);
  }
  return where;
}

/// Whether every rank can walk on `device`, and no two ranks of one process
/// would make each other's kernels wait (one stream, or the legacy default
/// stream beside another on one device, or more ranks on a device than its
/// hardware queues carry).
bool agreed(Comm& comm, const std::vector<Offer>& offers, const RankDevices& where) {
  if (const std::string why = crowding(comm, where); !why.empty()) {
    if (comm.rank == 0 && !comm.announcedCrowding.exchange(true)) {
      LOOM_INFO("{}: staging device buffers", why);
    }
    return false;
  }
  for (int p = 0; p < comm.nranks; ++p) {
    const Offer& o = offers[static_cast<size_t>(p)];
    if (o.usable == 0) return false;
    for (int q = 0; q < p; ++q) {
      if (!sameProcess(comm, p, q)) continue;
      if (const char* why =
              streamConflict(offers[q].device, offers[q].stream, o.device, o.stream)) {
        if (comm.rank == 0) {
          LOOM_INFO(
              "ranks {} and {} {}: staging device buffers, since their kernels would queue "
              "behind each other",
              q, p, why);
        }
        return false;
      }
    }
  }
  return true;
}

/// Maps the arenas of the peers this rank can write to (peer_arenas.h)
/// and returns the mask of those peers; a peer whose device is out of reach
/// or whose mapping is refused, and every peer with LOOM_CUDA_P2P=0, is left
/// to the proxy.
uint64_t mapPeerArenas(Comm& comm, DeviceWalkState& state, const std::vector<int>& hostOf,
                       const std::vector<cuda_p2p::ArenaRecord>& records) {
  if (!comm.config.cudaPeerWrites) {
    LOOM_INFO("rank {}: LOOM_CUDA_P2P=0: every peer through pinned host memory and the proxy",
              comm.rank);
    return state.peers.mapNone(comm.rank, static_cast<size_t>(comm.nranks), state.arena);
  }
  std::vector<cuda_p2p::PeerPlace> places(static_cast<size_t>(comm.nranks));
  for (int p = 0; p < comm.nranks; ++p) {
    cuda_p2p::PeerPlace& place = places[static_cast<size_t>(p)];
    place.device = state.devices[static_cast<size_t>(p)];
    place.sameHost = hostOf[p] == hostOf[comm.rank];
    place.sameProcess = sameProcess(comm, p, comm.rank);
  }
  return state.peers.map(comm.rank, state.device, state.arena, places, records);
}

/// Allocates the state on `where.devices[rank]`: FIFO arenas exchanged with every
/// peer. Pairs of ranks that cannot both write into each other's device
/// memory (other hosts, no peer access, a refused IPC mapping) talk through
/// their proxies, as every rank agrees from everyone's reach (proxiedPairs).
std::unique_ptr<DeviceWalkState> createState(Comm& comm, const RankDevices& where, void* stream) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  auto state = std::make_unique<DeviceWalkState>();
  const int device = where.devices[static_cast<size_t>(comm.rank)];
  state->device = device;
  state->devices = where.devices;
  state->crowded = crowding(comm, where);
  // The arena is sized for these channels; a walk with proxies uses one
  // channel, a prefix of it.
  state->geometry.bulkSlotBytes = static_cast<uint32_t>(comm.config.cudaSlotBytes);
  walk::FifoGeometry oneChannel = state->geometry;
  oneChannel.channels = 1;
  state->geometry.channels = walkChannels(comm, where, allGatherValue(comm, residentWalkBlocks()),
                                          walk::ArenaLayout(oneChannel, comm.nranks).bytes());
  const walk::ArenaLayout full(state->geometry, comm.nranks);
  rt.check(rt.malloc(&state->arena, full.bytes()), "cudaMalloc of the walker's FIFOs");
  rt.check(rt.memsetAsync(state->arena, 0, full.bytes(), stream), "cudaMemsetAsync");
  rt.check(rt.streamSynchronize(stream), "cudaStreamSynchronize");
  rt.check(rt.mallocHost(reinterpret_cast<void**>(&state->abortWord), sizeof(uint32_t)),
           "cudaMallocHost");
  *state->abortWord = 0;
  rt.check(rt.mallocHost(reinterpret_cast<void**>(&state->codecStatusMirror),
                         2 * static_cast<size_t>(comm.nranks) * sizeof(int)),
           "cudaMallocHost");
  rt.check(rt.mallocHost(reinterpret_cast<void**>(&state->statusMirror),
                         sizeof(walk::WalkStatus) * state->geometry.channels),
           "cudaMallocHost");
  for (void** event : {&state->done, &state->codecDone}) {
    rt.check(rt.eventCreateWithFlags(event, device::kEventDisableTiming),
             "cudaEventCreateWithFlags");
  }
  for (void*& event : state->uploaded) {
    rt.check(rt.eventCreateWithFlags(&event, device::kEventDisableTiming),
             "cudaEventCreateWithFlags");
  }

  const std::vector<cuda_p2p::ArenaRecord> records =
      allGatherValue(comm, cuda_p2p::recordOf(state->arena, comm.rank));
  const std::vector<int> hostOf = hostNumbers(comm.peers);
  const std::vector<uint64_t> reaches =
      allGatherValue(comm, mapPeerArenas(comm, *state, hostOf, records));
  const std::vector<std::vector<uint8_t>> pairs = walk::proxiedPairs(hostOf, reaches);
  state->proxied = pairs[static_cast<size_t>(comm.rank)];
  bool anyProxied = false;
  for (const std::vector<uint8_t>& row : pairs) {
    anyProxied = anyProxied || std::any_of(row.begin(), row.end(), [](uint8_t v) { return v; });
  }
  for (int p = 0; p < comm.nranks; ++p) {
    if (state->proxied[p] == 0) continue;
    // A peer that reaches this rank but not the other way round still talks
    // through the boxes; its mapping stays open but unused until destruction.
    state->peers.forget(p);
    if (static_cast<size_t>(p) >= comm.links.size() || comm.links[p] == nullptr) {
      raise(ErrorCode::InternalError, "rank {} is reached through the proxy but has no link", p);
    }
  }
  if (anyProxied) {
    // The proxy ships a bulk slot as one link message. Every rank sees the
    // same pairs and settings, so all of them fail here together or none.
    const size_t linkMessage = std::min(comm.config.shm.slotBytes, comm.config.tcp.slotBytes);
    if (linkMessage < state->geometry.bulkSlotBytes) {
      raise(ErrorCode::InvalidArgument,
            "LOOM_CUDA_SLOT_BYTES={} exceeds the links' largest message ({} B: the smaller of "
            "LOOM_SHM_SLOT_BYTES and LOOM_TCP_SLOT_BYTES), and some peers are reached through "
            "the proxy, which ships a slot as one message",
            state->geometry.bulkSlotBytes, linkMessage);
    }
    // A link carries one FIFO, and the proxy moves whole bulk slots; every
    // rank sees the same pairs, so all agree on the geometry.
    state->geometry.channels = 1;
    state->geometry.llMaxCallBytes = 0;
  }
  state->systemScope = anyProxied || comm.config.cudaSystemScope;
  for (int p = 0; p < comm.nranks; ++p) {
    state->systemScope = state->systemScope || !sameProcess(comm, p, comm.rank) ||
                         state->devices[static_cast<size_t>(p)] != device;
  }
  const walk::ArenaLayout layout(state->geometry, comm.nranks);
  if (anyProxied) {
    for (char** box : {&state->outbox, &state->inbox}) {
      rt.check(rt.mallocHost(reinterpret_cast<void**>(box), layout.bytes()), "cudaMallocHost");
      std::memset(*box, 0, layout.bytes());
    }
    std::vector<Link*> links(static_cast<size_t>(comm.nranks), nullptr);
    for (int p = 0; p < comm.nranks; ++p) {
      if (state->proxied[p] != 0) links[p] = comm.links[p].get();
    }
    state->proxy = std::make_unique<WalkProxyRunner>(
        std::make_unique<walk::WalkProxy>(layout, links, state->outbox, state->inbox),
        comm.config.timeout);
  }
  // Everything a walk needs is allocated before any rank launches one, and
  // never again (but for compressed calls' scratch, grown by all ranks
  // together: growCodecScratch): an allocation stops work on other streams of the device
  // from overlapping what comes after it, and a peer's kernel would be
  // waiting for this rank's. The program slots hold the largest program a
  // walk makes: kFusedCalls collectives, whose plans (ring, pairwise, star)
  // have at most 2n + 2 steps each (walkCollectives launches a longer group
  // in several walks), or a send/recv walk, with fewer calls per peer and
  // direction than slots (device_walk_p2p.cc).
  const auto n = static_cast<size_t>(comm.nranks);
  const uint32_t channels = state->geometry.channels;
  state->programCapacity = std::max(
      {size_t{16} << 10,
       walk::programBytesBound(channels, n, kFusedCalls * (2 * n + 2), kFusedCalls),
       walk::programBytesBound(channels, n, size_t{2} * (state->geometry.slotCount - 1) * n)});
  const size_t programBytes = state->programCapacity * DeviceWalkState::kProgramSlots;
  rt.check(rt.malloc(reinterpret_cast<void**>(&state->programs), programBytes), "cudaMalloc");
  rt.check(rt.mallocHost(reinterpret_cast<void**>(&state->programStaging), programBytes),
           "cudaMallocHost");
  rt.check(device::cudaKernels().table->prepareWalk(), "loading the plan-walking kernels");
  allGatherValue(comm, int32_t{1});  // the barrier that promise needs
  LOOM_INFO(
      "rank {}: collectives on device {} run by the plan-walking kernel "
      "(LOOM_CUDA_PATH=kernel), {} channels of {} KiB slots, {} KiB of FIFOs, {} peers "
      "through the proxy, {} scope",
      comm.rank, device, state->geometry.channels, state->geometry.bulkSlotBytes / 1024,
      layout.bytes() / 1024, std::count(state->proxied.begin(), state->proxied.end(), 1),
      state->systemScope ? "system" : "device");
  return state;
}

Algorithm walkAlgorithm(const Comm& comm, const Operation& op) {
  return chooseWalkAlgorithm(comm, op.collective, op.count * dataTypeSize(op.type));
}

}  // namespace

std::shared_ptr<const RankPlan> walkPlan(Comm& comm, const Operation& op) {
  return walkPlan(comm, op, walkAlgorithm(comm, op));
}

std::shared_ptr<const RankPlan> walkPlan(Comm& comm, const Operation& op, Algorithm algorithm) {
  std::shared_ptr<const RankPlan> plan = comm.plan(planRequestFor(comm, op, algorithm));
  if (plan->scratchElements > 0) {
    // Growing scratch here would allocate between launches (see createState).
    raise(ErrorCode::InternalError, "the plan-walking kernel has no scratch for {}",
          toString(op.collective));
  }
  return plan;
}

namespace {

size_t stepCount(const RankPlan& plan) {
  size_t steps = 0;
  for (const auto& stream : plan.streams) steps += stream.size();
  return steps;
}

/// Walks a group of collectives in as few launches as its element types,
/// streams and the program slots allow: consecutive calls of one type on one
/// stream share a launch, which walks them one after another on every
/// channel. Peers may cut the same group differently (their plans differ in
/// size); the messages on each connection come in the same order either way,
/// since each launch waits for the one before (launchWalk). A compressed call
/// is a sequence of its own (codec kernels and byte walks) between launches.
void walkCollectives(Comm& comm, DeviceWalkState& state, std::span<const Operation> ops) {
  std::vector<std::shared_ptr<const RankPlan>> plans;
  std::vector<walk::WalkPart> parts;
  walk::WalkLaunch launch;
  void* stream = nullptr;
  size_t steps = 0;
  auto flush = [&] {
    if (parts.empty()) return;
    if (parts.size() > 1 && !state.announcedFusion) {
      state.announcedFusion = true;
      LOOM_INFO("rank {}: a group's collectives walk {} in one launch (the first such launch)",
                comm.rank, parts.size());
    }
    launchWalk(comm, state, parts, launch, stream);
    parts.clear();
    plans.clear();
    steps = 0;
  };
  for (const Operation& op : ops) {
    if (op.codec.kind != CodecKind::None) {
      flush();
      walkCompressed(comm, state, op, op.stream);
      continue;
    }
    const Algorithm algorithm = walkAlgorithm(comm, op);
    std::shared_ptr<const RankPlan> plan = walkPlan(comm, op, algorithm);
    if (!state.announcedTree && algorithm == Algorithm::Tree) {
      state.announcedTree = true;
      LOOM_INFO("rank {}: {} of {} B walks the double binary tree", comm.rank,
                toString(op.collective), op.count * dataTypeSize(op.type));
    }
    const size_t planSteps = stepCount(*plan);
    const size_t fused =
        walk::programBytesBound(state.geometry.channels, static_cast<size_t>(comm.nranks),
                                steps + planSteps, parts.size() + 1);
    if (!parts.empty() &&
        (op.type != launch.type || op.stream != stream || fused > state.programCapacity)) {
      flush();
    }
    launch.type = op.type;
    stream = op.stream;
    walk::WalkPart part;
    part.plan = plan.get();
    part.op = op.op;
    part.protocol = walk::chooseProtocol(state.geometry, op.count * dataTypeSize(op.type));
    part.input = static_cast<const char*>(op.send);
    part.output = static_cast<char*>(op.recv);
    parts.push_back(part);
    plans.push_back(std::move(plan));
    steps += planSteps;
  }
  flush();
}

}  // namespace

bool canWalkHere() {
  if (!device::deviceRuntime().available) return false;
  const LoomCudaKernels* k = device::cudaKernels().table;
  return k != nullptr && k->walk != nullptr;
}

std::string finishedWalkFailure(DeviceWalkState& state) {
  const std::lock_guard<std::mutex> lock(state.statusMutex);
  if (state.pending && device::deviceRuntime().eventQuery(state.done) == 0) {
    state.pending = false;
    const std::string failure = describeWalkFailure(
        std::span<const walk::WalkStatus>(state.statusMirror, state.geometry.channels));
    if (state.failure.empty() && !failure.empty()) {
      state.failure = fmt::format("device collective {} failed: {}", state.walks, failure);
    }
  }
  if (state.failure.empty()) state.failure = compressedCallFailure(state);
  return state.failure;
}

void launchWalk(Comm& comm, DeviceWalkState& state, std::span<const walk::WalkPart> parts,
                walk::WalkLaunch launch, void* stream) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  // Calls on other streams still come after the previous walk: the FIFOs'
  // message numbers assume one walk at a time per communicator.
  if (state.walks > 0) {
    rt.check(rt.streamWaitEvent(stream, state.done, 0), "cudaStreamWaitEvent");
  }
  launch.rank = comm.rank;
  launch.nranks = comm.nranks;
  launch.timeoutNs = static_cast<uint64_t>(comm.config.timeout.count()) * 1'000'000;
  launch.abort = state.abortWord;
  launch.systemScope = state.systemScope;
  walk::FifoRoutes routes;
  routes.arenas = state.peers.pointers();
  if (state.proxy != nullptr) {
    routes.proxied = state.proxied;
    routes.outbox = state.outbox;
    routes.inbox = state.inbox;
  }
  // Built for the slot it will sit in, which createState sized for any walk.
  const size_t slot = state.walks % DeviceWalkState::kProgramSlots;
  char* onDevice = state.programs + slot * state.programCapacity;
  const walk::WalkProgram program = walk::buildWalkProgram(parts, launch, state.geometry, routes,
                                                           reinterpret_cast<uintptr_t>(onDevice));
  if (program.bytes() > state.programCapacity) {
    raise(ErrorCode::InternalError, "a walk program of {} B outgrew its {} B slot", program.bytes(),
          state.programCapacity);
  }
  char* staging = state.programStaging + slot * state.programCapacity;
  if (state.walks >= DeviceWalkState::kProgramSlots) {
    rt.check(rt.eventSynchronize(state.uploaded[slot]), "cudaEventSynchronize");
  }
  std::memcpy(staging, program.words.data(), program.bytes());
  rt.check(rt.memcpyAsync(onDevice, staging, program.bytes(), CopyKind::HostToDevice, stream),
           "copy of the walk program");
  rt.check(rt.eventRecord(state.uploaded[slot], stream), "cudaEventRecord");
  const LoomCudaKernels& k = *device::cudaKernels().table;
  rt.check(k.walk(onDevice, static_cast<int>(launch.type), program.channels, stream),
           "launch of the plan-walking kernel");
  // Only a launched walk's messages are queued: a proxy waiting for a walk
  // that never ran would fail every later call.
  if (state.proxy != nullptr) {
    state.proxy->add(walk::proxyMessages(parts, launch, state.geometry, state.proxied));
  }
  // The mirror and `done` change together, so a poller never reads a mirror
  // that this walk's copy may be writing.
  const std::lock_guard<std::mutex> lock(state.statusMutex);
  rt.check(
      rt.memcpyAsync(state.statusMirror, onDevice + program.statusOffset,
                     sizeof(walk::WalkStatus) * program.channels, CopyKind::DeviceToHost, stream),
      "copy of the walk's statuses");
  rt.check(rt.eventRecord(state.done, stream), "cudaEventRecord");
  state.pending = true;
  ++state.walks;
}

std::string describeWalkFailure(std::span<const walk::WalkStatus> statuses) {
  std::string out;
  for (size_t c = 0; c < statuses.size(); ++c) {
    const walk::WalkStatus& s = statuses[c];
    if (s.error == 0) continue;
    const char* what = "a bad program";
    if (s.error == static_cast<uint32_t>(walk::WalkError::Timeout)) what = "a timeout";
    if (s.error == static_cast<uint32_t>(walk::WalkError::Aborted)) what = "an abort";
    if (!out.empty()) out += "; ";
    out += fmt::format("channel {} stopped at step {} on {}", c, s.step, what);
    if (s.peer >= 0) {
      out += fmt::format(" waiting for {} rank {}", s.waitingFor == 1 ? "data from" : "room at",
                         s.peer);
    }
  }
  return out;
}

DeviceWalkState::~DeviceWalkState() {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  if (proxy != nullptr) {
    try {
      proxy->quiesce();  // the last kernel finishes only once its messages moved
    } catch (const Error& e) {
      LOOM_WARN("device collectives' proxy at destruction: {}", e.what());
    }
  }
  if (done != nullptr) {
    rt.eventSynchronize(done);  // the kernel reads the arena and program until then
    const std::string failure = finishedWalkFailure(*this);
    if (!failure.empty()) LOOM_WARN("{}", failure);
    rt.eventDestroy(done);
  }
  if (codecDone != nullptr) {
    rt.eventSynchronize(codecDone);  // the last compressed call's kernels read the scratch
    rt.eventDestroy(codecDone);
  }
  for (void* event : uploaded) {
    if (event != nullptr) rt.eventDestroy(event);
  }
  for (void* p : {arena, static_cast<void*>(programs), static_cast<void*>(codecScratch)}) {
    if (p != nullptr) rt.free(p);
  }
  if (programStaging != nullptr) rt.freeHost(programStaging);
  proxy.reset();  // stops its thread before the mailboxes go
  for (char* box : {outbox, inbox}) {
    if (box != nullptr) rt.freeHost(box);
  }
  if (statusMirror != nullptr) rt.freeHost(statusMirror);
  if (codecStatusMirror != nullptr) rt.freeHost(codecStatusMirror);
  if (abortWord != nullptr) rt.freeHost(abortWord);
}

namespace {

/// Whether a group's collectives walk, agreed with every rank (two ranks of
/// one process are on one device: whether their kernels could wait behind
/// each other depends on each call's streams). Rebuilds the state on every
/// rank when the ranks' devices moved. Throws RemoteError on every rank when
/// any rank's previous walk failed.
bool agreeWithEveryRank(Comm& comm, std::span<const Operation> collectives,
                        const std::string& failure) {
  Offer mine = offerFor(comm, collectives);
  mine.failed = failure.empty() ? 0 : 1;
  const std::vector<Offer> offers = allGatherValue(comm, mine);
  // After a failed walk a rank's FIFO counters no longer match its peers':
  // every rank learns it from the offers and reports it, rather than staging
  // a collective the failed rank would not join.
  std::vector<int> failed;
  for (int p = 0; p < comm.nranks; ++p) {
    if (offers[static_cast<size_t>(p)].failed != 0) failed.push_back(p);
  }
  if (!failed.empty()) {
    comm.asyncError.store(loomRemoteError);
    raise(ErrorCode::RemoteError, "rank {}: the device collectives of rank(s) {} failed earlier{}",
          comm.rank, fmt::join(failed, ", "), failure.empty() ? "" : ": " + failure);
  }
  const RankDevices where = devicesOf(offers);
  if (!agreed(comm, offers, where)) return false;
  const device::DeviceScope scope(where.devices[static_cast<size_t>(comm.rank)]);
  // Every rank sees the same offers, so all rebuild (or keep) their state
  // together. The swap is guarded for pollDeviceWalk; building and freeing,
  // which may wait, are not.
  if (comm.deviceWalk != nullptr && comm.deviceWalk->devices != where.devices) {
    std::unique_ptr<DeviceWalkState> old;
    {
      const std::lock_guard<std::mutex> lock(comm.deviceWalkMutex);
      old = std::move(comm.deviceWalk);
    }
  }
  if (comm.deviceWalk == nullptr) {
    std::unique_ptr<DeviceWalkState> fresh = createState(comm, where, collectives.front().stream);
    const std::lock_guard<std::mutex> lock(comm.deviceWalkMutex);
    comm.deviceWalk = std::move(fresh);
  }
  return true;
}

/// Whether a group's collectives walk, decided by this rank alone (no two
/// ranks of one process on one device): from the call, whose kind of buffers, counts and
/// codecs every rank shares, and from the devices all ranks named when the
/// communicator was made. So all ranks decide alike without a word, and a
/// steady-state call makes no exchange at all. A rank whose previous walk
/// failed throws RemoteError; its peers' walks that wait for it stop at their
/// deadline and report it (loomCommGetAsyncError, their next call).
bool decideAlone(Comm& comm, std::span<const Operation> collectives, const std::string& failure) {
  if (comm.deviceWalk == nullptr) return false;  // made at creation wherever possible(comm)
  if (!failure.empty()) {
    comm.asyncError.store(loomRemoteError);
    raise(ErrorCode::RemoteError, "rank {}: its device collectives failed earlier: {}", comm.rank,
          failure);
  }
  const int device = comm.deviceWalk->device;
  for (const Operation& op : collectives) {
    // A group that also holds collectives on host buffers is staged whole.
    if (!walkable(comm, op)) return false;
    if (deviceOf(op) != device) {
      raise(ErrorCode::InvalidUsage,
            "rank {}: the buffers of this {} are on device {}, but the communicator runs its "
            "device collectives on device {}, the current device when it was made (set the "
            "device before creating the communicator, as with NCCL)",
            comm.rank, toString(op.collective), deviceOf(op), device);
    }
  }
  return true;
}

}  // namespace

DeviceWalkOutcome runDeviceWalk(Comm& comm, std::span<const Operation> ops) {
  if (ops.empty() || comm.config.cudaPath != CudaPath::Kernel) return {};
  // A send/recv group involves only some ranks: its pairs agree among
  // themselves. A group with a collective involves every rank, and
  // LOOM_CUDA_PATH is part of the configuration they all agreed on, so all
  // reach the decision below together (a group that also holds send/recv
  // on some ranks walks its collectives, then its pairs as they agree).
  if (!hasCollective(ops)) return walkPointToPoint(comm, ops);
  if (!possible(comm)) return {};
  // Every rank makes the group's collectives; only some may add send/recv.
  std::vector<Operation> collectives;
  std::vector<Operation> pointToPoint;
  for (const Operation& op : ops) {
    (isPointToPoint(op) ? pointToPoint : collectives).push_back(op);
  }
  // Read once: what the decision says and what this rank reports must agree.
  const std::string failure =
      comm.deviceWalk != nullptr ? finishedWalkFailure(*comm.deviceWalk) : std::string();
  const bool walks = comm.deviceCallsAgree ? agreeWithEveryRank(comm, collectives, failure)
                                           : decideAlone(comm, collectives, failure);
  if (!walks) return {};
  const device::DeviceScope scope(comm.deviceWalk->device);
  // Every rank grows the codec scratch to the same size, together.
  size_t codecScratch = 0;
  for (const Operation& op : collectives) {
    codecScratch = std::max(codecScratch, compressedScratchBytes(comm, op));
  }
  growCodecScratch(comm, *comm.deviceWalk, codecScratch);
  // The pairs agree over the links before any launch: a walk's proxy may
  // be using them until the next call.
  PointToPointWalk pairs = agreePointToPoint(comm, pointToPoint);
  walkCollectives(comm, *comm.deviceWalk, collectives);
  launchPointToPoint(comm, pairs);
  if (pairs.outcome.walked && !comm.deviceWalk->announcedMixedGroup) {
    comm.deviceWalk->announcedMixedGroup = true;
    LOOM_INFO("rank {}: a group's collectives and send/recv walk on the device ({} and {} calls)",
              comm.rank, collectives.size(), pairs.walked.size());
  }
  CommStats::add(comm.stats.calls, 1);
  DeviceWalkOutcome outcome = std::move(pairs.outcome);
  // A rank with no peer to agree with (no send/recv, or only to itself)
  // leaves its send/recv to the host path.
  if (!outcome.handled) outcome.rest = std::move(pointToPoint);
  outcome.handled = true;
  outcome.walked = true;
  return outcome;
}

void prepareDeviceWalk(Comm& comm) {
  if (comm.config.cudaPath != CudaPath::Kernel) return;
  /// Whether a rank can walk now, and on which device (the current one).
  struct Ready {
    int32_t usable = 0;
    int32_t device = -1;
    int32_t streamQueues = 0;
  };
  Ready mine;
  // Only where the application has loaded CUDA: a host-only program never
  // loads a runtime because of this setting.
  if (device::cudaDriverLoaded() && canWalkHere() &&
      comm.nranks <= static_cast<int>(walk::kMaxConnections)) {
    const device::DeviceRuntime& rt = device::deviceRuntime();
    int current = -1;
    if (rt.getDevice(&current) == 0) {
      mine.usable = 1;
      mine.device = current;
      mine.streamQueues = streamQueues();
    } else {
      rt.getLastError();
    }
  }
  // Decided here, once, by every rank alike: a communicator some rank of
  // which has no CUDA loaded yet never walks, and its calls on host buffers
  // (a host-only program's: all of them) pay no agreement at all.
  const std::vector<Ready> all = allGatherValue(comm, mine);
  std::vector<int> missing;
  RankDevices where;
  for (size_t p = 0; p < all.size(); ++p) {
    if (all[p].usable == 0) missing.push_back(static_cast<int>(p));
    where.devices.push_back(all[p].device);
    where.queues.push_back(all[p].streamQueues);
  }
  comm.deviceWalkCapable = missing.empty() ? 1 : 0;
  comm.deviceCallsAgree = someRanksShareADevice(comm, where);
  if (!missing.empty()) {
    if (comm.rank == 0 && missing.size() < all.size()) {
      LOOM_INFO(
          "rank(s) {} had no CUDA device, kernels or loaded CUDA when the communicator was "
          "made: device buffers are staged (make a CUDA call, e.g. cudaSetDevice, before "
          "creating it)",
          fmt::join(missing, ", "));
    }
    return;
  }
  const device::DeviceScope scope(mine.device);
  // The per-thread default stream: the legacy one would wait for every
  // blocking stream of the device, some of which may hold other
  // communicators' walks.
  // NOLINTNEXTLINE(performance-no-int-to-ptr): cudaStreamPerThread is the handle 0x2
  void* const perThreadStream = reinterpret_cast<void*>(uintptr_t{2});
  std::unique_ptr<DeviceWalkState> fresh = createState(comm, where, perThreadStream);
  const std::lock_guard<std::mutex> lock(comm.deviceWalkMutex);
  comm.deviceWalk = std::move(fresh);
}

void pollDeviceWalk(Comm& comm) {
  const std::lock_guard<std::mutex> lock(comm.deviceWalkMutex);
  if (comm.deviceWalk == nullptr) return;
  if (!finishedWalkFailure(*comm.deviceWalk).empty()) comm.asyncError.store(loomRemoteError);
}

void quiesceDeviceWalkProxy(Comm& comm) {
  if (comm.deviceWalk != nullptr && comm.deviceWalk->proxy != nullptr) {
    comm.deviceWalk->proxy->quiesce();
  }
}

void abortDeviceWalks(Comm& comm) {
  if (comm.deviceWalk != nullptr && comm.deviceWalk->abortWord != nullptr) {
    std::atomic_ref<uint32_t>(*comm.deviceWalk->abortWord).store(1);
  }
}

}  // namespace loom
