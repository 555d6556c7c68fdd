// The int8 codec on device memory: encode, decode and decode-accumulate kernels that
// produce the same bytes and floats as Int8Codec (compression/int8_codec.h) on
// the same inputs, because both call the per-element math of
// compression/int8_math.h and counter_hash.h.
//
// Layout (Int8Codec's): ceil(n / block) fp32 scales, then n int8 codes; dst and
// src need no alignment. Each call enqueues one kernel on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "compression/codec.h"
#include "core/types.h"

namespace loom::cuda {

/// Bytes an encoding of n elements takes with `config` (Int8Codec::encodedBytes).
size_t int8EncodedBytes(size_t n, const CodecConfig& config);

/// Encodes n elements of `type` (fp32, fp16 or bf16) from src into dst, which
/// holds int8EncodedBytes(n, config). config.block must be valid
/// (validateCodecConfig); nearest or stochastic rounding per config, the random
/// bits per element drawn from (config.seed, context) exactly as on the host.
cudaError_t launchInt8Encode(const void* src, DataType type, size_t n, void* dst,
                             const CodecConfig& config, const EncodeContext& context,
                             cudaStream_t stream);

/// With error feedback (ErrorFeedback's compensate, encode, update in one
/// kernel): encodes c[i] = src[i] + residual[i] (in fp32) as launchInt8Encode
/// would encode c, and sets residual[i] = c[i] - decoded[i], or 0 where that
/// is not finite; bit for bit the host's. residual == nullptr is
/// launchInt8Encode.
cudaError_t launchInt8EncodeWithFeedback(const void* src, DataType type, size_t n, float* residual,
                                         void* dst, const CodecConfig& config,
                                         const EncodeContext& context, cudaStream_t stream);

/// acc[i] = acc[i] + decoded[i] for i < n, one rounding per element, as
/// Int8Codec::decodeAccumulate.
cudaError_t launchInt8DecodeAccumulate(const void* src, size_t n, const CodecConfig& config,
                                       float* acc, cudaStream_t stream);

/// sum[i] = the fp32 sum of `sources` encodings' elements i in order
/// 0, 1, ..., starting from +0 (as a zeroed sum decode-accumulated once per
/// source, bit for bit); the r-th encoding of n elements sits at
/// src + r * stride. One kernel and one pass over the codes.
cudaError_t launchInt8DecodeSum(const void* src, size_t stride, int sources, size_t n,
                                const CodecConfig& config, float* sum, cudaStream_t stream);

/// out[i] = decoded[i] as `type` (fp32, fp16 or bf16; one rounding from the
/// fp32 value), as Int8Codec::decode. cudaErrorInvalidValue for another type.
cudaError_t launchInt8Decode(const void* src, size_t n, const CodecConfig& config, DataType type,
                             void* out, cudaStream_t stream);

/// Loads the int8 kernels on the current device (see preloadWalkKernels: a
/// lazily loaded kernel's first launch may wait for the whole device).
cudaError_t preloadInt8Kernels();

}  // namespace loom::cuda
