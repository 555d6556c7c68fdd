// Candidate int8 encode kernels for loom_gpu_bench (int8_encode_candidates.cu
// says what each tries). Bench-only: the library ships none of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace loom::bench {

enum class Int8EncodeCandidate { Registers, Prefetch, HalfWarp };
inline constexpr Int8EncodeCandidate kInt8EncodeCandidates[] = {
    Int8EncodeCandidate::Registers, Int8EncodeCandidate::Prefetch, Int8EncodeCandidate::HalfWarp};

/// The bench's row label of `candidate`.
const char* int8EncodeCandidateName(Int8EncodeCandidate candidate);

/// Encodes n fp32 values (n a multiple of 256, src 16-byte aligned, dst
/// 4-byte aligned) into Int8Codec's layout, block 256, nearest rounding, on
/// the default stream; cudaErrorInvalidValue otherwise.
cudaError_t launchInt8EncodeCandidate(Int8EncodeCandidate candidate, const float* src, size_t n,
                                      void* dst);

}  // namespace loom::bench
