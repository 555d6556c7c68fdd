// Element-wise kernels on device memory: reduce two buffers, finalise Avg, copy.
//
// Each call enqueues one kernel on `stream` and returns at once (stream order,
// as NCCL users expect). Element math is the host reducers' own
// (math/reduce_ops.h, math/half.h), so a device result equals
// reducerFor(type, op) on the same inputs bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/types.h"

namespace loom::cuda {

/// dst[i] = a[i] (op) b[i] for i < n, in stream order. dst may alias a or b
/// exactly. Avg reduces as Sum; finish with launchAvgFinalize. Returns the
/// launch status (cudaSuccess, or the error of an invalid configuration).
cudaError_t launchReduce(void* dst, const void* a, const void* b, size_t n, DataType type,
                         ReduceOp op, cudaStream_t stream);

/// data[i] = data[i] / nranks (integers truncate toward zero), as the host's
/// finalizerFor(type, Avg). nranks must be >= 1.
cudaError_t launchAvgFinalize(void* data, size_t n, DataType type, int nranks, cudaStream_t stream);
/// Loads the Avg-finalise kernels on the current device (see preloadWalkKernels).
cudaError_t preloadAvgFinalizeKernels();

/// dst[0, bytes) = src[0, bytes) with a kernel, not the copy engine: a step of a
/// kernel-driven collective copies inside its own launch, and this is that copy
/// on its own (and the bandwidth reference for the reduction kernel).
cudaError_t launchCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace loom::cuda
