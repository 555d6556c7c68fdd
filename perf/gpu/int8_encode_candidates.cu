// Candidate int8 encode kernels, timed by loom_gpu_bench beside the one the
// library ships (compression/cuda/int8_kernels.cu), which reaches 70 % of the
// H200's copy bandwidth against a target of 80 %. The shipped kernel gives a
// codec block to a warp, reads it, reduces its absmax, then reads it again to
// encode: each warp has one block's loads in flight and none while it
// reduces and encodes, so it waits on memory latency. Each candidate changes
// one thing, so one GPU run says which matters:
//  - registers: the block stays in registers between absmax and encode (one
//    read), with the quads per lane fixed at compile time, so nothing spills
//    to local memory (the register attempt timed on 2026-12-04 had
//    runtime-sized loops);
//  - prefetch: as registers, and the warp loads its next block before it
//    reduces and encodes the current one (two blocks in flight);
//  - half-warp: 16 lanes per block, so a warp has two blocks in flight and
//    each lane four quads.
// Only fp32, nearest rounding and the default block of 256 (what the bench
// times); the bench checks that every candidate writes the shipped kernel's
// bytes. A winner moves into the library, generalised.
#include <cstdint>
#include <cstring>

#include "compression/cuda/kernel_launch.cuh"
#include "compression/int8_math.h"
#include "perf/gpu/int8_encode_candidates.h"

namespace loom::bench {
namespace {

using namespace codec;
using cuda::gridFor;

constexpr int kThreads = 256;
constexpr size_t kBlock = 256;
constexpr int kQuadsPerBlock = kBlock / 4;

struct alignas(16) Floats4 {
  float v[4];
};
struct alignas(4) Codes4 {
  int8_t v[4];
};

/// The quads of codec block b that lane `lane` of a kLanes-lane group holds.
template <int kLanes>
struct Slice {
  static constexpr int kQuads = kQuadsPerBlock / kLanes;
  Floats4 q[kQuads];

  __device__ void load(const Floats4* src, size_t b, unsigned lane) {
    const Floats4* block = src + b * kQuadsPerBlock;
#pragma unroll
    for (int k = 0; k < kQuads; ++k) q[k] = block[lane + k * kLanes];
  }
};

/// The max over a group of kLanes lanes (aligned within the warp). Every lane
/// of the warp must call it.
template <int kLanes>
__device__ uint32_t groupMax(uint32_t v) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    const uint32_t other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

/// Encodes block b from `slice` into the Int8Codec layout at dst (scales,
/// then codes). Every lane of the warp calls it; `valid` false only joins the
/// shuffle.
template <int kLanes>
__device__ void encodeBlock(const Slice<kLanes>& slice, size_t b, unsigned lane, size_t blocks,
                            unsigned char* dst, bool valid) {
  uint32_t absmax = 0;
#pragma unroll
  for (int k = 0; k < Slice<kLanes>::kQuads; ++k) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t m = magnitudeBits(slice.q[k].v[j]);
      absmax = m > absmax ? m : absmax;
    }
  }
  absmax = groupMax<kLanes>(absmax);
  if (!valid) return;
  const Int8Block block = int8BlockFromAbsmax(absmax);
  auto* codes = reinterpret_cast<Codes4*>(dst + blocks * sizeof(float)) + b * kQuadsPerBlock;
#pragma unroll
  for (int k = 0; k < Slice<kLanes>::kQuads; ++k) {
    Codes4 out;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      out.v[j] = block.finite ? int8QuantizeNearest(slice.q[k].v[j], block) : int8_t{0};
    }
    codes[lane + k * kLanes] = out;
  }
  if (lane == 0) memcpy(dst + b * sizeof(float), &block.scale, sizeof(float));
}

__global__ void __launch_bounds__(kThreads)
    registersKernel(const Floats4* src, size_t blocks, unsigned char* dst) {
  const unsigned lane = threadIdx.x % 32;
  const size_t warps = static_cast<size_t>(gridDim.x) * (kThreads / 32);
  for (size_t b = static_cast<size_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32; b < blocks;
       b += warps) {
    Slice<32> slice;
    slice.load(src, b, lane);
    encodeBlock<32>(slice, b, lane, blocks, dst, true);
  }
}

__global__ void __launch_bounds__(kThreads)
    prefetchKernel(const Floats4* src, size_t blocks, unsigned char* dst) {
  const unsigned lane = threadIdx.x % 32;
  const size_t warps = static_cast<size_t>(gridDim.x) * (kThreads / 32);
  size_t b = static_cast<size_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (b >= blocks) return;
  Slice<32> current;
  current.load(src, b, lane);
  for (; b < blocks; b += warps) {
    Slice<32> next{};
    if (b + warps < blocks) next.load(src, b + warps, lane);
    encodeBlock<32>(current, b, lane, blocks, dst, true);
    current = next;
  }
}

__global__ void __launch_bounds__(kThreads)
    halfWarpKernel(const Floats4* src, size_t blocks, unsigned char* dst) {
  const unsigned lane = threadIdx.x % 16;
  const size_t half = (threadIdx.x / 16) % 2;
  const size_t warps = static_cast<size_t>(gridDim.x) * (kThreads / 32);
  // The loop runs alike on both halves of a warp (the shuffles need both);
  // a half past the end only joins them.
  for (size_t pair = static_cast<size_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
       2 * pair < blocks; pair += warps) {
    const size_t b = 2 * pair + half;
    const bool valid = b < blocks;
    Slice<16> slice{};
    if (valid) slice.load(src, b, lane);
    encodeBlock<16>(slice, b, lane, blocks, dst, valid);
  }
}

}  // namespace

const char* int8EncodeCandidateName(Int8EncodeCandidate candidate) {
  switch (candidate) {
    case Int8EncodeCandidate::Registers:
      return "int8 quantize: registers";
    case Int8EncodeCandidate::Prefetch:
      return "int8 quantize: prefetch";
    case Int8EncodeCandidate::HalfWarp:
      return "int8 quantize: half-warp";
  }
  return "?";
}

cudaError_t launchInt8EncodeCandidate(Int8EncodeCandidate candidate, const float* src, size_t n,
                                      void* dst) {
  if (n == 0 || n % kBlock != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(dst) % 4 != 0) {
    return cudaErrorInvalidValue;
  }
  const size_t blocks = n / kBlock;
  const auto* in = reinterpret_cast<const Floats4*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  const unsigned grid = gridFor(blocks, kThreads / 32);
  switch (candidate) {
    case Int8EncodeCandidate::Registers:
      registersKernel<<<grid, kThreads>>>(in, blocks, out);
      break;
    case Int8EncodeCandidate::Prefetch:
      prefetchKernel<<<grid, kThreads>>>(in, blocks, out);
      break;
    case Int8EncodeCandidate::HalfWarp:
      halfWarpKernel<<<gridFor(blocks, kThreads / 16), kThreads>>>(in, blocks, out);
      break;
  }
  return cudaGetLastError();
}

}  // namespace loom::bench
