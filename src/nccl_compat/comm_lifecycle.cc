// The end of a communicator's life: finalize, destroy, abort, revoke, and the
// asynchronous error that may end it early.
#include <memory>

#include "comm.h"
#include "profiling_alias.h"
#include "status.h"

namespace loom_nccl {
namespace {

/// Frees `comm` and, when it has one, its Loom communicator through `release`
/// (loomCommDestroy or loomCommAbort). The handle is gone even if Loom fails.
void release(ncclComm_t comm, loomResult_t (*loomRelease)(loomComm_t)) {
  ncclComm& c = liveComm(comm);
  const ncclComm::State state = c.state.load(std::memory_order_acquire);
  if (state == ncclComm::State::Creating) {
    fail(ncclInvalidUsage,
         "comm is still being created inside ncclGroupStart/ncclGroupEnd; call ncclGroupEnd first");
  }
  const std::unique_ptr<ncclComm> owned(&c);
  if (state != ncclComm::State::Failed) check(loomRelease(c.loom));
}

}  // namespace
}  // namespace loom_nccl

using loom_nccl::check;
using loom_nccl::fail;
using loom_nccl::guarded;

extern "C" {

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return guarded("ncclCommFinalize", [&] {
    // Loom finishes every call before returning, so there is nothing in flight
    // to flush: finalizing only forbids further calls.
    loom_nccl::readyComm(comm).state.store(ncclComm::State::Finalized, std::memory_order_release);
  });
}

// Destroying or aborting NULL is a no-op, as in NCCL.
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return guarded("ncclCommDestroy", [&] {
    if (comm != nullptr) loom_nccl::release(comm, loomCommDestroy);
  });
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  // Another thread may be inside a call on `comm`: loomCommAbort wakes it and
  // waits for it to leave Loom, and no shim function touches its ncclComm after
  // its Loom call returns, so freeing the ncclComm here is safe.
  return guarded("ncclCommAbort", [&] {
    if (comm != nullptr) loom_nccl::release(comm, loomCommAbort);
  });
}

// Operations in flight return an error and later ones fail at once; the
// communicator can then be shrunk, split or destroyed.
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return guarded("ncclCommRevoke", [&] {
    if (revokeFlags != 0) {
      fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags {} (Loom knows only 0)", revokeFlags);
    }
    check(loomCommRevoke(loom_nccl::liveComm(comm).loom));
  });
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return guarded("ncclCommGetAsyncError", [&] {
    loom_nccl::requireOut(asyncError, "asyncError");
    const ncclComm& c = loom_nccl::liveComm(comm);
    switch (c.state.load(std::memory_order_acquire)) {
      case ncclComm::State::Creating:
        *asyncError = ncclInProgress;
        return;
      case ncclComm::State::Failed:
        *asyncError = c.failure;
        return;
      default:
        break;
    }
    loomResult_t result = loomSuccess;
    check(loomCommGetAsyncError(c.loom, &result));
    // NCCL: a revoked communicator reads ncclSuccess once quiescent, so that
    // destroy, split and shrink may proceed; until then loomInProgress, which
    // maps to ncclInProgress.
    *asyncError = result == loomRevoked ? ncclSuccess : loom_nccl::fromLoom(result);
  });
}

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclCommFinalize)
LOOM_NCCL_PROFILING_ALIAS(ncclCommDestroy)
LOOM_NCCL_PROFILING_ALIAS(ncclCommAbort)
LOOM_NCCL_PROFILING_ALIAS(ncclCommRevoke)
LOOM_NCCL_PROFILING_ALIAS(ncclCommGetAsyncError)
