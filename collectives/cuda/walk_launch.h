// Launching the plan walker on the GPU (walk_kernel.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "collectives/walker/walk_types.h"
#include "core/types.h"

namespace loom::cuda {

/// Enqueues one block per channel on `stream`, each walking its channel of
/// `args` (device memory, built by walk::buildWalkProgram for that address).
/// Returns the launch status; a failed walk reports in args->status.
/// Loads every walk kernel on the current device, so that no launch has to
/// load one while peers' kernels spin (call before any rank launches).
cudaError_t preloadWalkKernels();

/// How many walk blocks the current device holds at once: its SMs times the
/// fewest blocks of any walk kernel one SM fits.
cudaError_t walkResidentBlocks(int* blocks);

cudaError_t launchWalk(const walk::WalkArgs* args, DataType type, unsigned channels,
                       cudaStream_t stream);

}  // namespace loom::cuda
