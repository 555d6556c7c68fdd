// Collectives on device buffers by direct plans (device_paths/direct_plan.h): when
// every rank lives in this process and every buffer on one GPU, each rank's
// stream waits for its peers' streams (CUDA events), then copies and reduces
// straight from their buffers: no host copy, no host wait for the GPU. The call
// returns as soon as the work is enqueued, ordered on the caller's stream as
// NCCL's calls are. Opt-in with LOOM_CUDA_PATH=direct until it has run on a
// GPU (docs/cuda.md); otherwise device buffers are staged (DeviceStaging).
#pragma once

#include <span>

#include "comm/operation.h"

namespace loom {

/// A communicator's ordering events, made on first use on the device in use.
struct DeviceDirectEvents {
  int device = -1;
  void* ready = nullptr;   ///< this rank's stream reached the call
  void* middle = nullptr;  ///< this rank finished phase 0
  void* done = nullptr;    ///< this rank finished reading its peers' buffers
  ~DeviceDirectEvents();
};

/// Runs `ops` by direct plans and returns true, or returns false (having run
/// nothing) when they must be staged: not asked for, ranks in several
/// processes, host buffers, compression, send/recv, or buffers on several
/// devices. The decision is made together with every peer, so all ranks of
/// the communicator take the same path.
bool runDeviceDirect(Comm& comm, std::span<const Operation> ops);

}  // namespace loom
