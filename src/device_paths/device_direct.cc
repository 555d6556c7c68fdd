#include "device_paths/device_direct.h"

#include <algorithm>
#include <vector>

#include "core/log.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"
#include "device/device_scope.h"
#include "device_paths/direct_plan.h"
#include "device_paths/exchange_values.h"

namespace loom {
namespace {

/// What a rank says before a call: the one device all its operations run on,
/// or -1 where they cannot all take the direct path, and how many there are.
struct Offer {
  int32_t device = -1;
  uint32_t ops = 0;
};

/// One rank's buffers and an event, exchanged per operation (pointers are
/// valid for every rank: they share the process).
struct Record {
  const void* send = nullptr;
  void* recv = nullptr;
  void* event = nullptr;
};

/// Conditions every rank of the process sees alike: the path is asked for,
/// all ranks share this process, and the runtime and kernels are there.
bool possible(const Comm& comm) {
  if (comm.config.cudaPath != CudaPath::Direct || !device::deviceRuntime().available ||
      device::cudaKernels().table == nullptr) {
    return false;
  }
  return std::all_of(comm.peers.begin(), comm.peers.end(), [&](const PeerInfo& p) {
    return p.pid == comm.peers[comm.rank].pid && p.hostId == comm.peers[comm.rank].hostId;
  });
}

/// The device of the op's buffers, or -1 when it cannot run directly.
int directDevice(const Operation& op) {
  if (!op.onDevice || op.codec.kind != CodecKind::None || !hasDirectPlan(op.collective)) return -1;
  return deviceOf(op);
}

Offer offerFor(std::span<const Operation> ops) {
  Offer offer;
  offer.ops = static_cast<uint32_t>(ops.size());
  offer.device = directDevice(ops.front());
  for (const Operation& op : ops) {
    if (directDevice(op) != offer.device) offer.device = -1;
  }
  return offer;
}

DeviceDirectEvents& eventsOn(Comm& comm, int device) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  if (comm.deviceEvents != nullptr && comm.deviceEvents->device == device) {
    return *comm.deviceEvents;
  }
  comm.deviceEvents.reset();
  auto events = std::make_unique<DeviceDirectEvents>();
  events->device = device;
  for (void** e : {&events->ready, &events->middle, &events->done}) {
    rt.check(rt.eventCreateWithFlags(e, device::kEventDisableTiming), "cudaEventCreateWithFlags");
  }
  comm.deviceEvents = std::move(events);
  LOOM_INFO(
      "rank {}: collectives on device {} run by the direct device path (LOOM_CUDA_PATH=direct)",
      comm.rank, device);
  return *comm.deviceEvents;
}

/// Records `event` on `stream`, tells every peer, and makes `stream` wait for
/// every peer's event: a barrier between the ranks' streams, not their threads.
void streamBarrier(Comm& comm, void* event, void* stream) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  rt.check(rt.eventRecord(event, stream), "cudaEventRecord");
  Record mine;
  mine.event = event;
  const std::vector<Record> all = allGatherValue(comm, mine);
  for (int p = 0; p < comm.nranks; ++p) {
    if (p == comm.rank) continue;
    rt.check(rt.streamWaitEvent(stream, all[p].event, 0), "cudaStreamWaitEvent");
  }
}

void enqueue(const std::vector<DirectStep>& steps, const Operation& op, int nranks) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  const LoomCudaKernels& k = *device::cudaKernels().table;
  const size_t es = dataTypeSize(op.type);
  const int type = static_cast<int>(op.type);
  for (const DirectStep& s : steps) {
    switch (s.kind) {
      case DirectStepKind::kCopy:
        rt.check(
            rt.memcpyAsync(s.dst, s.src, s.count * es, device::CopyKind::DeviceToDevice, op.stream),
            "device copy of a direct step");
        break;
      case DirectStepKind::kReduce:
        rt.check(k.reduce(s.dst, s.dst, s.src, s.count, type, static_cast<int>(op.op), op.stream),
                 "reduce kernel of a direct step");
        break;
      case DirectStepKind::kFinalize:
        rt.check(k.avgFinalize(s.dst, s.count, type, nranks, op.stream), "average kernel");
        break;
    }
  }
}

void runOne(Comm& comm, const Operation& op, DeviceDirectEvents& events) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  rt.check(rt.eventRecord(events.ready, op.stream), "cudaEventRecord");
  Record mine;
  mine.send = op.send;
  mine.recv = op.recv;
  mine.event = events.ready;
  const std::vector<Record> all = allGatherValue(comm, mine);
  std::vector<DirectBuffers> buffers;
  for (int p = 0; p < comm.nranks; ++p) {
    buffers.push_back({static_cast<const char*>(all[p].send), static_cast<char*>(all[p].recv)});
    if (p != comm.rank) {
      rt.check(rt.streamWaitEvent(op.stream, all[p].event, 0), "cudaStreamWaitEvent");
    }
  }
  const DirectPlan plan =
      directPlan(op.collective, op.count, op.type, op.op, op.root, comm.rank, buffers);
  enqueue(plan.phase[0], op, comm.nranks);
  if (plan.twoPhases()) {
    streamBarrier(comm, events.middle, op.stream);
    enqueue(plan.phase[1], op, comm.nranks);
  }
  // No rank's later work may touch its buffers while a peer still reads them.
  streamBarrier(comm, events.done, op.stream);
}

}  // namespace

DeviceDirectEvents::~DeviceDirectEvents() {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  for (void* e : {ready, middle, done}) {
    if (e != nullptr) rt.eventDestroy(e);
  }
}

bool runDeviceDirect(Comm& comm, std::span<const Operation> ops) {
  // Send/recv groups involve only some ranks, so they never ask everyone; a
  // group with a collective involves every rank (its send/recv calls make the
  // offer unusable, so it is staged everywhere).
  if (ops.empty() || !hasCollective(ops) || !possible(comm)) return false;
  const std::vector<Offer> offers = allGatherValue(comm, offerFor(ops));
  const Offer& mine = offers[static_cast<size_t>(comm.rank)];
  for (const Offer& o : offers) {
    if (o.device < 0 || o.device != mine.device || o.ops != mine.ops) return false;
  }
  const device::DeviceScope scope(mine.device);
  DeviceDirectEvents& events = eventsOn(comm, mine.device);
  for (const Operation& op : ops) runOne(comm, op, events);
  CommStats::add(comm.stats.calls, 1);
  return true;
}

}  // namespace loom
