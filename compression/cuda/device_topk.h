// The top-k codec on device memory: encode, decode and decode-accumulate
// kernels producing the same bytes and floats as TopkCodec
// (compression/topk_codec.h) on the same inputs. Both rank elements with the
// order of compression/topk_math.h (magnitude, then lower index) and select by
// the same three-pass radix select, so the kept set is one exact set.
//
// Layout (TopkCodec's): uint32 count k, k uint32 indices ascending, k fp32
// values. Every call only enqueues work on `stream`: no host synchronisation,
// so it can sit inside a stream-ordered collective.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "compression/codec.h"
#include "core/types.h"

namespace loom::cuda {

/// Bytes an encoding of n elements takes with `config` (TopkCodec::encodedBytes).
size_t topkEncodedBytes(size_t n, const CodecConfig& config);

/// Device scratch launchTopkEncode needs for n elements (selection state,
/// per-tile counts and the scan's temporary storage), 256-byte aligned; 0 if
/// the scan could not size its storage (launchTopkEncode then refuses).
size_t topkEncodeScratchBytes(size_t n);

/// Encodes n elements of `type` (fp32, fp16 or bf16) from src into dst, which
/// holds topkEncodedBytes(n, config). `scratch` holds topkEncodeScratchBytes(n)
/// and is used by this call only until it completes on `stream`.
/// cudaErrorInvalidValue for another type, n >= 2^32 or a ratio outside (0, 1].
cudaError_t launchTopkEncode(const void* src, DataType type, size_t n, void* dst,
                             const CodecConfig& config, void* scratch, cudaStream_t stream);

/// acc[idx] = acc[idx] + value for every entry of the encoding `src` (srcBytes
/// long) of n elements, one rounding each, as TopkCodec::decodeAccumulate.
/// The encoding may come from another process: its header and indices are
/// checked on the device first, and if they are not a valid encoding of n
/// elements (count, size, indices strictly ascending and below n) nothing is
/// written to acc and *status (device memory) is set to 1; else to 0.
cudaError_t launchTopkDecodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc,
                                       int* status, cudaStream_t stream);

/// out = the decoded n elements as `type` (fp32, fp16 or bf16): zeros except at
/// the entries. Checked like launchTopkDecodeAccumulate; out is untouched on a
/// bad encoding.
cudaError_t launchTopkDecode(const void* src, size_t srcBytes, size_t n, DataType type, void* out,
                             int* status, cudaStream_t stream);

/// Loads the top-k kernels on the current device (see preloadWalkKernels) by
/// running each path once on a few elements, waiting for them.
cudaError_t preloadTopkKernels();

}  // namespace loom::cuda
