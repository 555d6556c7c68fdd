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

/// Load/store-accessible peers: none through a device API, so the team of one.
Team ncclTeamLsa(ncclComm_t comm) {
  const Team world = worldTeam(comm, "ncclTeamLsa");
  return Team{world.nRanks > 0 ? 1 : 0, world.nRanks > 0 ? 0 : -1, 1};
}

/// Peers on other nodes at the same local rank: with no device API, the team of one.
Team ncclTeamRail(ncclComm_t comm) {
  const Team world = worldTeam(comm, "ncclTeamRail");
  return Team{world.nRanks > 0 ? 1 : 0, world.nRanks > 0 ? 0 : -1, 1};
}

int ncclTeamRankToWorld(ncclComm_t comm, Team team, int rank) {
  if (team.nRanks == 1) {
    // A team of one (Lsa, Rail) holds only the caller.
    return rank == 0 ? worldTeam(comm, "ncclTeamRankToWorld").rank : -1;
  }
  return worldRank(comm, team, rank, "ncclTeamRankToWorld");
}

int ncclTeamRankToLsa(ncclComm_t comm, Team team, int rank) {
  // The Lsa team is the caller alone: only the caller's own rank maps into it.
  if (team.nRanks == 1 && rank != 0) return -1;
  const int world = team.nRanks == 1 ? worldTeam(comm, "ncclTeamRankToLsa").rank
                                     : worldRank(comm, team, rank, "ncclTeamRankToLsa");
  const int self = worldTeam(comm, "ncclTeamRankToLsa").rank;
  return world >= 0 && world == self ? 0 : -1;
}

}  // extern "C"
