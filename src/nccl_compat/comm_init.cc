// Creating communicators: unique ids, init (rank, config, scalable, all), split
// and shrink.
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "comm.h"
#include "config.h"
#include "cuda_driver.h"
#include "env_mapping.h"
#include "group.h"
#include "profiling_alias.h"
#include "status.h"

namespace loom_nccl {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(loomUniqueId));

/// Creates a communicator with `make` and hands out its handle in *out: at once
/// outside a group; inside one, *out is written now (as NCCL does) and `make`
/// runs at the outermost ncclGroupEnd, so that one thread can create several
/// ranks of one communicator. Until then the handle is only good for
/// ncclCommGetAsyncError (ncclInProgress) and ncclCommDestroy.
void create(ncclComm_t* out, int device, std::function<loomComm_t()> make) {
  if (!group::isOpen()) {
    *out = wrapCreated(make(), device);
    return;
  }
  auto comm = std::make_unique<ncclComm>(device);
  ncclComm* pending = comm.get();
  group::deferCreation([pending, make = std::move(make)] {
    try {
      pending->created(make());
    } catch (const Failure& f) {
      pending->creationFailed(f.code(), f.what());
      throw;
    } catch (...) {
      pending->creationFailed(ncclInternalError, "creating the communicator failed");
      throw;
    }
  });
  *out = comm.release();
}

void initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
              const ncclConfig_t* config) {
  mapEnvironmentOnce();
  requireOut(comm, "comm");
  checkConfig(config);
  // Checked here too, not only by Loom, so that a call inside a group fails at once.
  if (nranks < 1) fail(ncclInvalidArgument, "nranks={} must be >= 1", nranks);
  if (rank < 0 || rank >= nranks) {
    fail(ncclInvalidArgument, "rank={} is outside [0, nranks={})", rank, nranks);
  }
  loomUniqueId loomId;
  std::memcpy(&loomId, &id, sizeof(loomId));
  create(comm, currentCudaDevice(), [=] {
    loomComm_t handle = nullptr;
    check(loomCommInitRank(&handle, nranks, loomId, rank));
    return handle;
  });
}

}  // namespace
}  // namespace loom_nccl

using loom_nccl::check;
using loom_nccl::fail;
using loom_nccl::guarded;
using loom_nccl::requireOut;

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return guarded("ncclGetUniqueId", [&] {
    loom_nccl::mapEnvironmentOnce();
    requireOut(uniqueId, "uniqueId");
    loomUniqueId id;
    check(loomGetUniqueId(&id));
    std::memcpy(uniqueId, &id, sizeof(id));
  });
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return guarded("ncclCommInitRank",
                 [&] { loom_nccl::initRank(comm, nranks, commId, rank, nullptr); });
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return guarded("ncclCommInitRankConfig",
                 [&] { loom_nccl::initRank(comm, nranks, commId, rank, config); });
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  return guarded("ncclCommInitRankScalable", [&] {
    if (nId < 1) fail(ncclInvalidArgument, "nId={} must be >= 1", nId);
    requireOut(commIds, "commIds");
    // NCCL spreads the bootstrap over several ids; Loom rendezvouses at one.
    // Every rank passes the same list, so the first id is one they all know.
    loom_nccl::initRank(newcomm, nranks, commIds[0], myrank, config);
  });
}

ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return guarded("ncclCommInitAll", [&] {
    loom_nccl::mapEnvironmentOnce();
    requireOut(comm, "comm");
    if (ndev < 1) fail(ncclInvalidArgument, "ndev={} must be >= 1", ndev);
    for (int i = 0; devlist != nullptr && i < ndev; ++i) {
      if (devlist[i] < 0) fail(ncclInvalidArgument, "devlist[{}]={} is negative", i, devlist[i]);
    }
    std::vector<loomComm_t> handles(static_cast<size_t>(ndev));
    check(loomCommInitAll(handles.data(), ndev, devlist));
    for (int i = 0; i < ndev; ++i) {
      comm[i] = loom_nccl::wrapCreated(handles[i], devlist != nullptr ? devlist[i] : i);
    }
  });
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  return guarded("ncclCommSplit", [&] {
    requireOut(newcomm, "newcomm");
    const ncclComm& parent = loom_nccl::readyComm(comm);
    loom_nccl::checkConfig(config);
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
      fail(ncclInvalidArgument, "color={} must be >= 0 or NCCL_SPLIT_NOCOLOR", color);
    }
    static_assert(NCCL_SPLIT_NOCOLOR == LOOM_SPLIT_NOCOLOR);
    const loomComm_t parentHandle = parent.loom;
    auto split = [=] {
      loomComm_t child = nullptr;
      check(loomCommSplit(parentHandle, color, key, &child));
      return child;
    };
    if (color != NCCL_SPLIT_NOCOLOR) {
      loom_nccl::create(newcomm, parent.device, split);
      return;
    }
    // A rank left out still takes part in the split, and gets no communicator.
    *newcomm = nullptr;
    if (loom_nccl::group::isOpen()) {
      loom_nccl::group::deferCreation([split] { split(); });
    } else {
      split();
    }
  });
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return guarded("ncclCommShrink", [&] {
    requireOut(newcomm, "newcomm");
    const ncclComm& parent = loom_nccl::readyComm(comm);
    loom_nccl::checkConfig(config);
    static_assert(NCCL_SHRINK_DEFAULT == LOOM_SHRINK_DEFAULT);
    static_assert(NCCL_SHRINK_ABORT == LOOM_SHRINK_ABORT);
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
      fail(ncclInvalidArgument, "excludeRanksList={} with excludeRanksCount={}",
           static_cast<const void*>(excludeRanksList), excludeRanksCount);
    }
    // Copied now: inside a group the shrink runs at ncclGroupEnd.
    const std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
    const loomComm_t parentHandle = parent.loom;
    loom_nccl::create(newcomm, parent.device, [=] {
      loomComm_t child = nullptr;
      check(loomCommShrink(parentHandle, excluded.data(), static_cast<int>(excluded.size()), &child,
                           shrinkFlags));
      return child;
    });
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclGetUniqueId)
LOOM_NCCL_PROFILING_ALIAS(ncclCommInitRank)
LOOM_NCCL_PROFILING_ALIAS(ncclCommInitRankConfig)
LOOM_NCCL_PROFILING_ALIAS(ncclCommInitRankScalable)
LOOM_NCCL_PROFILING_ALIAS(ncclCommInitAll)
LOOM_NCCL_PROFILING_ALIAS(ncclCommSplit)
LOOM_NCCL_PROFILING_ALIAS(ncclCommShrink)
