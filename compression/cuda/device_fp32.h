// Kernels on the codecs' fp32 working values, for the compressed collectives
// of the kernel path (src/compressed/device_walk_compressed.cc): error feedback's
// compensation for codecs without a fused encode (top-k), top-k's residual
// update, and the fp32 sum stored in the output's type. Each produces the
// host's floats bit for bit (compression/error_feedback.h, element_io.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/types.h"

namespace loom::cuda {

/// out[i] = src[i] + residual[i] in fp32 (ErrorFeedback::compensate), and
/// residual[i] = out[i], or 0 where out[i] is not finite: what the residual
/// becomes for every element the codec drops (top-k's update, finished by
/// launchTopkForgetKept). `type` is fp32, fp16 or bf16.
cudaError_t launchCompensate(const void* src, DataType type, size_t n, float* residual, float* out,
                             cudaStream_t stream);

/// residual[i] = 0 for every index the top-k encoding (encodedBytes long, this
/// rank's own, of n elements) kept: those went out whole.
cudaError_t launchTopkForgetKept(const void* encoding, size_t encodedBytes, size_t n,
                                 float* residual, cudaStream_t stream);

/// out[i] = src[i] in `type` (fp32, fp16 or bf16), one rounding.
cudaError_t launchNarrow(const float* src, size_t n, DataType type, void* out, cudaStream_t stream);

/// Loads these kernels on the current device (see preloadWalkKernels).
cudaError_t preloadFp32Kernels();

}  // namespace loom::cuda
