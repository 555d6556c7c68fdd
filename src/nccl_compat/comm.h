// What an ncclComm_t points to: a Loom communicator plus what NCCL attaches to
// one (its CUDA device, its PreMulSum ops, and its life cycle).
#pragma once

#include <loom/loom.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "premul_sum.h"

/// nccl.h declares `struct ncclComm` at global scope; this is its definition.
struct ncclComm {
  enum class State {
    Creating,   ///< made inside a group; Loom creates it at the outermost ncclGroupEnd
    Ready,      ///< `loom` is valid
    Failed,     ///< creating it failed; `failure` and `failureMessage` say why
    Finalized,  ///< ncclCommFinalize ran; only ncclCommDestroy may follow
  };
  static constexpr uint64_t kAliveMagic = 0x4e43434c53484d31ULL;  // "NCCLSHM1"

  explicit ncclComm(int cudaDevice) : device(cudaDevice) {}
  ~ncclComm() { magic.store(0); }

  /// Called once, by whoever created the Loom communicator.
  void created(loomComm_t handle);
  void creationFailed(ncclResult_t code, const std::string& message);

  /// Best-effort guard against stale or foreign pointers, like Loom's own.
  std::atomic<uint64_t> magic{kAliveMagic};
  /// Written before `state` leaves Creating; read only after seeing the new state.
  std::atomic<State> state{State::Creating};
  loomComm_t loom = nullptr;
  ncclResult_t failure = ncclSuccess;
  std::string failureMessage;
  const int device;
  loom_nccl::PreMulSumTable ops;
};

namespace loom_nccl {

/// `comm` in whatever state; throws ncclInvalidArgument for NULL or a pointer
/// that is not a live shim communicator.
ncclComm& liveComm(ncclComm_t comm);
/// `comm` when calls may use it; throws ncclInvalidUsage naming the state otherwise.
ncclComm& readyComm(ncclComm_t comm);

/// A new handle for a Loom communicator that is already created.
ncclComm_t wrapCreated(loomComm_t handle, int cudaDevice);

}  // namespace loom_nccl
