#include "comm.h"

#include <memory>

#include "status.h"

void ncclComm::created(loomComm_t handle) {
  loom = handle;
  state.store(State::Ready, std::memory_order_release);
}

void ncclComm::creationFailed(ncclResult_t code, const std::string& message) {
  failure = code;
  failureMessage = message;
  state.store(State::Failed, std::memory_order_release);
}

namespace loom_nccl {

ncclComm& liveComm(ncclComm_t comm) {
  if (comm == nullptr) fail(ncclInvalidArgument, "comm is NULL");
  if (comm->magic.load() != ncclComm::kAliveMagic) {
    fail(ncclInvalidArgument, "comm {} was destroyed or is not a communicator of this library",
         static_cast<const void*>(comm));
  }
  return *comm;
}

ncclComm& readyComm(ncclComm_t comm) {
  ncclComm& c = liveComm(comm);
  switch (c.state.load(std::memory_order_acquire)) {
    case ncclComm::State::Ready:
      return c;
    case ncclComm::State::Creating:
      fail(ncclInvalidUsage,
           "comm is still being created inside ncclGroupStart/ncclGroupEnd; call ncclGroupEnd "
           "first");
    case ncclComm::State::Failed:
      fail(ncclInvalidUsage, "comm could not be created: {}", c.failureMessage);
    case ncclComm::State::Finalized:
      fail(ncclInvalidUsage,
           "comm was finalized (ncclCommFinalize); only ncclCommDestroy may follow");
  }
  fail(ncclInternalError, "comm is in an unknown state");
}

ncclComm_t wrapCreated(loomComm_t handle, int cudaDevice) {
  auto comm = std::make_unique<ncclComm>(cudaDevice);
  comm->created(handle);
  return comm.release();
}

}  // namespace loom_nccl
