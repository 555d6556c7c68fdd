// The host half of NCCL's device API (nccl_device/*.h, NCCL 2.28): device
// communicators, teams and the requirements of barriers and low-latency
// all-to-all that user kernels call into. Loom has no device-side API, so
// creating a device communicator or a requirement is refused; the team queries
// answer for the world team, which is well defined. Programs such as PyTorch
// link these names whether or not they use them, so they must exist for such a
// program to load at all.
//
// nccl_device.h is CUDA C++ and is not included here; the prototypes below
// keep its C ABI (opaque pointers, and ncclTeam_t's three ints by value).
#include "comm.h"
#include "status.h"

using loom_nccl::fail;
using loom_nccl::guarded;
using loom_nccl::readyComm;

namespace {

/// nccl_device/core.h's struct ncclTeam.
struct Team {
  int nRanks;
  int rank;
  int stride;
};

constexpr const char* kNoDeviceApi =
    "Loom has no device-side API (nccl_device.h): its collectives run in its own kernels";

/// The world team of `comm`, or an empty team (recording why) when `comm` is not usable.
Team worldTeam(ncclComm_t comm, const char* function) {
  Team team{0, -1, 1};
  guarded(function, [&] {
    loomComm_t loom = readyComm(comm).loom;
    loom_nccl::check(loomCommCount(loom, &team.nRanks));
    loom_nccl::check(loomCommUserRank(loom, &team.rank));
  });
  return team;
}

/// The team of the caller alone (Lsa, Rail: no peers through a device API),
/// or an empty team when `comm` is not usable.
Team selfTeam(ncclComm_t comm, const char* function) {
  const Team world = worldTeam(comm, function);
  return world.nRanks > 0 ? Team{1, 0, 1} : Team{0, -1, 1};
}

int worldRank(ncclComm_t comm, Team team, int rank, const char* function) {
  int answer = -1;
  guarded(function, [&] {
    const Team world = worldTeam(comm, function);
    if (team.nRanks != world.nRanks || team.stride != 1) {
      fail(ncclInvalidArgument, "only the world team exists in Loom");
    }
    if (rank < 0 || rank >= world.nRanks) {
      fail(ncclInvalidArgument, "rank {} is outside the team of {}", rank, world.nRanks);
    }
    answer = rank;
  });
  return answer;
}

/// The world rank of `rank` of `team` (the world team, or a team of the
/// caller alone), or -1.
int toWorld(ncclComm_t comm, Team team, int rank, const char* function) {
  if (team.nRanks == 1) return rank == 0 ? worldTeam(comm, function).rank : -1;
  return worldRank(comm, team, rank, function);
}

}  // namespace

extern "C" {

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void* requirements, void* outDevComm) {
  return guarded("ncclDevCommCreate", [&] {
    readyComm(comm);
    fail(ncclInvalidUsage, "{}", kNoDeviceApi);
  });
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* devComm) {
  return guarded("ncclDevCommDestroy", [&] {
    readyComm(comm);
    fail(ncclInvalidUsage, "no device communicator can exist: {}", kNoDeviceApi);
  });
}

ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, Team team, int nBarriers,
                                             void* outHandle, void* outRequirement) {
  return guarded("ncclGinBarrierCreateRequirement",
                 [&] { fail(ncclInvalidUsage, "{}", kNoDeviceApi); });
}

ncclResult_t ncclLsaBarrierCreateRequirement(Team team, int nBarriers, void* outHandle,
                                             void* outRequirement) {
  return guarded("ncclLsaBarrierCreateRequirement",
                 [&] { fail(ncclInvalidUsage, "{}", kNoDeviceApi); });
}

int ncclLLA2ACalcSlots(int maxElements, int maxElementSize) {
  guarded("ncclLLA2ACalcSlots", [&] { fail(ncclInvalidUsage, "{}", kNoDeviceApi); });
  return 0;
}

ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, void* outHandle,
                                        void* outRequirement) {
  return guarded("ncclLLA2ACreateRequirement", [&] { fail(ncclInvalidUsage, "{}", kNoDeviceApi); });
}

Team ncclTeamWorld(ncclComm_t comm) { return worldTeam(comm, "ncclTeamWorld"); }

/// Load/store-accessible peers: none through a device API.
Team ncclTeamLsa(ncclComm_t comm) { return selfTeam(comm, "ncclTeamLsa"); }

/// Peers on other nodes at the same local rank: none through a device API.
Team ncclTeamRail(ncclComm_t comm) { return selfTeam(comm, "ncclTeamRail"); }

int ncclTeamRankToWorld(ncclComm_t comm, Team team, int rank) {
  return toWorld(comm, team, rank, "ncclTeamRankToWorld");
}

/// The Lsa team is the caller alone: only the caller's own rank maps into it.
int ncclTeamRankToLsa(ncclComm_t comm, Team team, int rank) {
  const int world = toWorld(comm, team, rank, "ncclTeamRankToLsa");
  return world >= 0 && world == worldTeam(comm, "ncclTeamRankToLsa").rank ? 0 : -1;
}

}  // extern "C"
