// NCCL 2.29+ functions that the toolkit's nccl.h (2.28) does not declare but
// that current PyTorch links: without them `import torch` fails under
// LD_PRELOAD of the shim. Their signatures follow NCCL 2.29's headers. Growing
// a communicator maps to Loom's; the others answer ncclInvalidUsage with what
// to do instead, because what they serve (releasing a communicator's device
// memory, one-sided signals on registered windows) is not something Loom has.
// The list of names is newer_api.txt, which the symbol test reads.
#include <cstdint>
#include <cstring>

#include "comm.h"
#include "config.h"
#include "cuda_driver.h"
#include "profiling_alias.h"
#include "status.h"

/// NCCL 2.29's descriptor of ncclWaitSignal; only ever passed through here.
typedef struct ncclWaitSignalDesc ncclWaitSignalDesc_t;

extern "C" {

ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommMemStats(ncclComm_t comm, int stat, uint64_t* value);
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            cudaStream_t stream);

namespace {

ncclResult_t refuse(const char* function, const char* why) {
  return loom_nccl::guarded(function, [&] { loom_nccl::fail(ncclInvalidUsage, "{}", why); });
}

constexpr const char* kNoSuspend =
    "Loom cannot suspend a communicator to release its memory; destroy it and create a new one";
constexpr const char* kNoWindows =
    "Loom has no one-sided windows or signals (NCCL 2.29 symmetric memory); use ncclSend and "
    "ncclRecv";

}  // namespace

ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  return loom_nccl::guarded("ncclCommGetUniqueId", [&] {
    loom_nccl::requireOut(uniqueId, "uniqueId");
    loomUniqueId id;
    loom_nccl::check(loomCommGetUniqueId(loom_nccl::readyComm(comm).loom, &id));
    static_assert(sizeof(id) == sizeof(*uniqueId));
    std::memcpy(uniqueId, &id, sizeof(id));
  });
}

// Members pass their communicator; new ranks pass NULL and the id. Not
// deferred inside a group: a grow is collective over members and new ranks
// in different processes, so nothing is gained by batching it.
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config) {
  return loom_nccl::guarded("ncclCommGrow", [&] {
    loom_nccl::requireOut(newcomm, "newcomm");
    loom_nccl::checkConfig(config);
    loomUniqueId id;
    if (uniqueId != nullptr) std::memcpy(&id, uniqueId, sizeof(id));
    loomComm_t grown = nullptr;
    int device = loom_nccl::currentCudaDevice();
    if (comm != nullptr) {
      const ncclComm& parent = loom_nccl::readyComm(comm);
      device = parent.device;
      loom_nccl::check(loomCommGrow(parent.loom, nRanks, nullptr, -1, &grown));
    } else {
      loom_nccl::check(
          loomCommGrow(nullptr, nRanks, uniqueId != nullptr ? &id : nullptr, rank, &grown));
    }
    *newcomm = loom_nccl::wrapCreated(grown, device);
  });
}
ncclResult_t ncclCommSuspend(ncclComm_t, int) { return refuse("ncclCommSuspend", kNoSuspend); }
ncclResult_t ncclCommResume(ncclComm_t) { return refuse("ncclCommResume", kNoSuspend); }
ncclResult_t ncclCommMemStats(ncclComm_t, int, uint64_t*) {
  return refuse("ncclCommMemStats",
                "Loom does not report communicator memory statistics (loom_perf and "
                "loomCommGetStats report traffic)");
}
ncclResult_t ncclWinGetUserPtr(ncclComm_t, ncclWindow_t, void**) {
  return refuse("ncclWinGetUserPtr", kNoWindows);
}
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void**) {
  return refuse("ncclGetLsaMultimemDevicePointer", kNoWindows);
}
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void**) {
  return refuse("ncclGetPeerDevicePointer", kNoWindows);
}
ncclResult_t ncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
                           unsigned int, ncclComm_t, cudaStream_t) {
  return refuse("ncclPutSignal", kNoWindows);
}
ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t, cudaStream_t) {
  return refuse("ncclSignal", kNoWindows);
}
ncclResult_t ncclWaitSignal(int, ncclWaitSignalDesc_t*, ncclComm_t, cudaStream_t) {
  return refuse("ncclWaitSignal", kNoWindows);
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclCommGetUniqueId)
LOOM_NCCL_PROFILING_ALIAS(ncclCommGrow)
LOOM_NCCL_PROFILING_ALIAS(ncclCommSuspend)
LOOM_NCCL_PROFILING_ALIAS(ncclCommResume)
LOOM_NCCL_PROFILING_ALIAS(ncclCommMemStats)
LOOM_NCCL_PROFILING_ALIAS(ncclWinGetUserPtr)
LOOM_NCCL_PROFILING_ALIAS(ncclGetLsaMultimemDevicePointer)
LOOM_NCCL_PROFILING_ALIAS(ncclGetPeerDevicePointer)
LOOM_NCCL_PROFILING_ALIAS(ncclPutSignal)
LOOM_NCCL_PROFILING_ALIAS(ncclSignal)
LOOM_NCCL_PROFILING_ALIAS(ncclWaitSignal)
