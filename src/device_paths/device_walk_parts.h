// The pieces device_walk.cc shares with device_walk_p2p.cc (send/recv groups
// on the plan-walking kernel) and device_walk_placement.cc (where walks may
// run); not for other callers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/plan.h"
#include "collectives/walker/walk_program.h"
#include "device_paths/device_walk.h"

namespace loom {

/// The kernel path's plan of a collective (ring, tree, pairwise or star:
/// none that needs scratch).
std::shared_ptr<const RankPlan> walkPlan(Comm& comm, const Operation& op, Algorithm algorithm);
/// The same with chooseWalkAlgorithm's choice.
std::shared_ptr<const RankPlan> walkPlan(Comm& comm, const Operation& op);
/// Whether this process has a CUDA runtime with a device and the walk kernels.
bool canWalkHere();
/// Whether ranks p and q live in one process (pids repeat across hosts and
/// containers, so the host counts too).
bool sameProcess(const Comm& comm, int p, int q);
/// The hardware queues CUDA gives each device of this process
/// (CUDA_DEVICE_MAX_CONNECTIONS: 8 unless set, at most 32).
int32_t streamQueues();
/// Every rank's device and its process's hardware queues (streamQueues()),
/// as all ranks exchanged them.
struct RankDevices {
  std::vector<int> devices;
  std::vector<int32_t> queues;
};
/// How many ranks of rank p's process walk on rank p's device (p included).
int ranksSharingDevice(const Comm& comm, const RankDevices& where, int p);
/// Whether two ranks of one process walk on one device: only their kernels
/// can queue behind each other, depending on each call's streams.
bool someRanksShareADevice(const Comm& comm, const RankDevices& where);
/// Why the ranks' walks might not all run at once: some process has more
/// ranks on one device than half its hardware queues (`where` is every
/// rank's, so every rank answers alike); empty when none has.
std::string crowding(const Comm& comm, const RankDevices& where);
/// The walk blocks this rank's device holds at once, 0 when unknown.
int32_t residentWalkBlocks();
/// Channels for every rank alike: LOOM_NCHANNELS above 1, else the default
/// (fewer where a channel's FIFOs, `channelBytes`, would take the arena past
/// its budget), and at most what lets all the walk blocks of the ranks of one
/// process on one device run at once: a block spinning for a peer's block
/// that cannot start until it ends would wait until the deadline (seen on an
/// H200: 8 ranks of 32 channels). `resident` is every rank's
/// residentWalkBlocks().
uint32_t walkChannels(const Comm& comm, const RankDevices& where,
                      const std::vector<int32_t>& resident, size_t channelBytes);
/// Why two ranks of one process cannot both walk on these streams (their
/// kernels must run at the same time to meet), or nullptr.
const char* streamConflict(int deviceP, uint64_t streamP, int deviceQ, uint64_t streamQ);
/// What the first failed walk of `state` said, reading the last walk's
/// statuses if it has finished; empty while none failed.
std::string finishedWalkFailure(DeviceWalkState& state);
/// Enqueues `parts` on `stream` as one walk: program upload, kernel, status
/// copy. `launch` names the element type; the rest is filled in.
void launchWalk(Comm& comm, DeviceWalkState& state, std::span<const walk::WalkPart> parts,
                walk::WalkLaunch launch, void* stream);
/// The send/recv calls of a group that walk, as their pairs agreed.
struct PointToPointWalk {
  DeviceWalkOutcome outcome;             ///< `walked` is set once launched
  std::vector<const Operation*> walked;  ///< into the span given to agreePointToPoint
  void* stream = nullptr;
};
/// Agrees with the other end of every pair (over the links, never with
/// bystanders) which send/recv calls of `ops` walk; the others are left in
/// `outcome.rest` for another path. Uses the links, so it comes before any
/// launch whose proxy may be using them.
PointToPointWalk agreePointToPoint(Comm& comm, std::span<const Operation> ops);
/// Enqueues the agreed calls as one walk (nothing when none walk).
void launchPointToPoint(Comm& comm, PointToPointWalk& walk);
/// Both of the above: a group of only send/recv.
DeviceWalkOutcome walkPointToPoint(Comm& comm, std::span<const Operation> ops);

}  // namespace loom
