// Top-k selection and its encoding on the device, stream-ordered throughout.
//
// Encode = radix select + ordered compaction, no sort:
//   1. three histogram passes over the magnitude digits (11, 11, 9 bits), each
//      followed by a one-block kernel that picks the digit holding the k-th
//      largest magnitude (a block-wide scan of the bins from the top). After
//      them the state holds the threshold magnitude T and how many elements
//      of magnitude exactly T belong to the top k ("take"), as on the host;
//   2. per tile of 2,048 elements, the counts of elements above T and equal
//      to T, packed into one 64-bit word (above << 32 | equal);
//   3. an exclusive scan of the tile words (CUB);
//   4. each tile recounts with a block scan, so every element knows how many
//      above-T (G) and equal-T (E) elements precede it; a kept element goes to
//      entry G + min(E, take). That is its rank among the kept ones by index,
//      so indices come out ascending with no sort, exactly as the host writes.
// The state lives in the caller's scratch, so nothing waits on the host.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "compression/cuda/device_topk.h"
#include "compression/cuda/kernel_launch.cuh"
#include "compression/topk_math.h"

namespace loom::cuda {
namespace {

using namespace codec;

constexpr int kThreads = 256;
constexpr int kItems = 8;  // per thread and tile, consecutive elements
constexpr size_t kTile = static_cast<size_t>(kThreads) * kItems;
constexpr int kChooseThreads = 1024;
constexpr int kBinsPerChooser = kTopkMaxBins / kChooseThreads;
constexpr size_t kHeaderBytes = sizeof(uint32_t);
constexpr size_t kEntryBytes = sizeof(uint32_t) + sizeof(float);
constexpr size_t kAlign = 256;

/// The radix select's progress, in scratch.
struct SelectState {
  uint32_t prefix;      ///< the digits of the threshold chosen so far
  uint32_t prefixMask;  ///< which bits of `prefix` are chosen
  uint32_t need;        ///< the threshold's rank among elements matching the prefix
  uint32_t pad;
  uint32_t hist[kTopkMaxBins];
};

size_t alignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

size_t tilesFor(size_t n) { return (n + kTile - 1) / kTile; }

/// Where each part of the scratch starts.
struct ScratchLayout {
  size_t counts, offsets, scanTemp, scanTempBytes, total;
};

ScratchLayout scratchLayout(size_t n) {
  const size_t tiles = tilesFor(n);
  ScratchLayout l{};
  l.counts = alignUp(sizeof(SelectState));
  l.offsets = l.counts + alignUp(tiles * sizeof(uint64_t));
  l.scanTemp = l.offsets + alignUp(tiles * sizeof(uint64_t));
  // A failed size query leaves total at 0, which launchTopkEncode refuses.
  if (cub::DeviceScan::ExclusiveSum(nullptr, l.scanTempBytes, static_cast<const uint64_t*>(nullptr),
                                    static_cast<uint64_t*>(nullptr),
                                    static_cast<int>(tiles)) != cudaSuccess) {
    return l;
  }
  l.total = l.scanTemp + alignUp(l.scanTempBytes);
  return l;
}

__global__ void topkInitKernel(SelectState* state, uint32_t k, uint32_t* header) {
  if (threadIdx.x == 0) {
    state->prefix = 0;
    state->prefixMask = 0;
    state->need = k;
    *header = k;
  }
  for (int b = threadIdx.x; b < kTopkMaxBins; b += blockDim.x) state->hist[b] = 0;
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    topkHistogramKernel(const typename E::Storage* src, size_t n, SelectState* state, int pass) {
  __shared__ uint32_t hist[kTopkMaxBins];
  const uint32_t bins = topkBins(pass);
  for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) hist[b] = 0;
  __syncthreads();
  const uint32_t prefix = state->prefix;
  const uint32_t mask = state->prefixMask;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint32_t m = magnitudeBits(E::widen(src[i]));
    if ((m & mask) == prefix) atomicAdd(&hist[topkDigit(m, pass)], 1u);
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) {
    if (hist[b] != 0) atomicAdd(&state->hist[b], hist[b]);
  }
}

// One block. Thread t holds the bins at positions [t * kBinsPerChooser, ...)
// counted from the top; an exclusive scan gives each bin the count of the
// larger digits, and the one bin where the running count reaches `need` is
// the digit. The histogram is cleared for the next pass.
__global__ void __launch_bounds__(kChooseThreads)
    topkChooseDigitKernel(SelectState* state, int pass) {
  using Scan = cub::BlockScan<uint32_t, kChooseThreads>;
  __shared__ typename Scan::TempStorage scanStorage;
  const uint32_t bins = topkBins(pass);
  const uint32_t need = state->need;
  uint32_t counts[kBinsPerChooser];
  for (int j = 0; j < kBinsPerChooser; ++j) {
    const uint32_t position = threadIdx.x * kBinsPerChooser + j;
    counts[j] = position < bins ? state->hist[bins - 1 - position] : 0;
  }
  uint32_t above[kBinsPerChooser];
  Scan(scanStorage).ExclusiveSum(counts, above);
  __syncthreads();  // every count is read before anyone clears or writes
  for (int j = 0; j < kBinsPerChooser; ++j) {
    const uint32_t position = threadIdx.x * kBinsPerChooser + j;
    if (position >= bins) break;
    state->hist[bins - 1 - position] = 0;
    if (above[j] < need && need <= above[j] + counts[j]) {
      state->prefix |= (bins - 1 - position) << topkDigitShift(pass);
      state->prefixMask = topkPrefixMask(pass);
      state->need = need - above[j];
    }
  }
}

template <typename E>
__device__ uint64_t threadCounts(const typename E::Storage* src, size_t n, size_t first,
                                 uint32_t threshold) {
  uint64_t c = 0;
  for (int j = 0; j < kItems; ++j) {
    const size_t i = first + j;
    if (i < n) c += topkClassify(magnitudeBits(E::widen(src[i])), threshold);
  }
  return c;
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    topkTileCountKernel(const typename E::Storage* src, size_t n, const SelectState* state,
                        uint64_t* counts) {
  using Reduce = cub::BlockReduce<uint64_t, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const size_t tile = blockIdx.x;
  const size_t first = tile * kTile + static_cast<size_t>(threadIdx.x) * kItems;
  const uint64_t total = Reduce(storage).Sum(threadCounts<E>(src, n, first, state->prefix));
  if (threadIdx.x == 0) counts[tile] = total;
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    topkCompactKernel(const typename E::Storage* src, size_t n, const SelectState* state,
                      const uint64_t* tileOffsets, uint32_t k, unsigned char* dst) {
  using Scan = cub::BlockScan<uint64_t, kThreads>;
  __shared__ typename Scan::TempStorage storage;
  const uint32_t threshold = state->prefix;
  const uint32_t take = state->need;
  const size_t tile = blockIdx.x;
  const size_t first = tile * kTile + static_cast<size_t>(threadIdx.x) * kItems;
  uint64_t before = 0;
  Scan(storage).ExclusiveSum(threadCounts<E>(src, n, first, threshold), before);
  before += tileOffsets[tile];
  uint32_t above = static_cast<uint32_t>(before >> 32);
  uint32_t equal = static_cast<uint32_t>(before);
  auto* indices = reinterpret_cast<uint32_t*>(dst + kHeaderBytes);
  auto* values = reinterpret_cast<float*>(dst + kHeaderBytes + k * sizeof(uint32_t));
  for (int j = 0; j < kItems; ++j) {
    const size_t i = first + j;
    if (i >= n) break;
    const float v = E::widen(src[i]);
    uint32_t entry = 0;
    if (topkEntry(magnitudeBits(v), threshold, take, above, equal, entry)) {
      indices[entry] = static_cast<uint32_t>(i);
      values[entry] = v;
    }
  }
}

// Decoding checks bytes that may come from another process before using them.
__global__ void topkCheckKernel(const unsigned char* src, uint32_t count, size_t n, int* status) {
  const auto* indices = reinterpret_cast<const uint32_t*>(src + kHeaderBytes);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t start = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (start == 0 && *reinterpret_cast<const uint32_t*>(src) != count) atomicExch(status, 1);
  for (size_t j = start; j < count; j += stride) {
    const uint32_t idx = indices[j];
    if (idx >= n || (j > 0 && indices[j - 1] >= idx)) atomicExch(status, 1);
  }
}

/// Calls apply(index, value) for each entry of an encoding the check kernel
/// passed (grid-stride); nothing if it failed.
template <typename Apply>
__device__ void forEachCheckedEntry(const unsigned char* src, uint32_t count, const int* status,
                                    Apply apply) {
  if (*status != 0) return;
  const auto* indices = reinterpret_cast<const uint32_t*>(src + kHeaderBytes);
  const auto* values =
      reinterpret_cast<const float*>(src + kHeaderBytes + count * sizeof(uint32_t));
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < count;
       j += stride) {
    apply(indices[j], values[j]);
  }
}

__global__ void topkAccumulateKernel(const unsigned char* src, uint32_t count, float* acc,
                                     const int* status) {
  // Indices are distinct (checked ascending), so no two threads add to one element.
  forEachCheckedEntry(src, count, status,
                      [acc](uint32_t i, float v) { acc[i] = addRn(acc[i], v); });
}

template <typename E>
__global__ void topkFillZeroKernel(typename E::Storage* out, size_t n, const int* status) {
  if (*status != 0) return;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = E::narrow(0.0f);
  }
}

template <typename E>
__global__ void topkScatterKernel(const unsigned char* src, uint32_t count,
                                  typename E::Storage* out, const int* status) {
  forEachCheckedEntry(src, count, status, [out](uint32_t i, float v) { out[i] = E::narrow(v); });
}

bool aligned4(const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; }

/// The count an encoding of srcBytes bytes holds, or -1 if no encoding of n
/// elements has that size.
long long countForSize(size_t srcBytes, size_t n) {
  if (srcBytes < kHeaderBytes || (srcBytes - kHeaderBytes) % kEntryBytes != 0) return -1;
  const size_t count = (srcBytes - kHeaderBytes) / kEntryBytes;
  return count > n ? -1 : static_cast<long long>(count);
}

/// Clears *status and enqueues the check of `src`; the count, or -1 for a
/// size no encoding has (then nothing is enqueued).
long long checkEncoding(const void* src, size_t srcBytes, size_t n, int* status,
                        cudaStream_t stream, cudaError_t* error) {
  const long long count = countForSize(srcBytes, n);
  if (count < 0 || !aligned4(src) || n > UINT32_MAX) {
    *error = cudaErrorInvalidValue;
    return -1;
  }
  *error = cudaMemsetAsync(status, 0, sizeof(int), stream);
  if (*error != cudaSuccess) return -1;
  topkCheckKernel<<<gridFor(static_cast<size_t>(count), kThreads), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(src), static_cast<uint32_t>(count), n, status);
  *error = cudaGetLastError();
  return *error == cudaSuccess ? count : -1;
}

}  // namespace

size_t topkEncodedBytes(size_t n, const CodecConfig& config) {
  return kHeaderBytes + topkKeptCount(n, config.ratio) * kEntryBytes;
}

size_t topkEncodeScratchBytes(size_t n) { return scratchLayout(n).total; }

cudaError_t launchTopkEncode(const void* src, DataType type, size_t n, void* dst,
                             const CodecConfig& config, void* scratch, cudaStream_t stream) {
  if (!(config.ratio > 0 && config.ratio <= 1) || n > UINT32_MAX || !aligned4(dst) ||
      reinterpret_cast<uintptr_t>(scratch) % kAlign != 0) {
    return cudaErrorInvalidValue;
  }
  const auto k = static_cast<uint32_t>(topkKeptCount(n, config.ratio));
  const ScratchLayout layout = scratchLayout(n);
  if (layout.total == 0) return cudaErrorInvalidValue;
  auto* base = static_cast<unsigned char*>(scratch);
  auto* state = reinterpret_cast<SelectState*>(base);
  auto* counts = reinterpret_cast<uint64_t*>(base + layout.counts);
  auto* offsets = reinterpret_cast<uint64_t*>(base + layout.offsets);
  auto* out = static_cast<unsigned char*>(dst);
  return withFloatElement(type, [&](auto element) -> cudaError_t {
    using E = decltype(element);
    const auto* in = static_cast<const typename E::Storage*>(src);
    topkInitKernel<<<1, kThreads, 0, stream>>>(state, k, reinterpret_cast<uint32_t*>(out));
    if (n == 0) return cudaGetLastError();
    // k == n keeps everything: the initial state (threshold 0, take n) says so, as on the host.
    for (int pass = 0; k < n && pass < kTopkPasses; ++pass) {
      topkHistogramKernel<E><<<gridFor(n, kThreads), kThreads, 0, stream>>>(in, n, state, pass);
      topkChooseDigitKernel<<<1, kChooseThreads, 0, stream>>>(state, pass);
    }
    const auto tiles = static_cast<unsigned>(tilesFor(n));
    topkTileCountKernel<E><<<tiles, kThreads, 0, stream>>>(in, n, state, counts);
    size_t tempBytes = layout.scanTempBytes;
    cudaError_t e = cub::DeviceScan::ExclusiveSum(base + layout.scanTemp, tempBytes, counts,
                                                  offsets, static_cast<int>(tiles), stream);
    if (e != cudaSuccess) return e;
    topkCompactKernel<E><<<tiles, kThreads, 0, stream>>>(in, n, state, offsets, k, out);
    return cudaGetLastError();
  });
}

cudaError_t launchTopkDecodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc,
                                       int* status, cudaStream_t stream) {
  cudaError_t error = cudaSuccess;
  const long long count = checkEncoding(src, srcBytes, n, status, stream, &error);
  if (count <= 0) return error;
  topkAccumulateKernel<<<gridFor(static_cast<size_t>(count), kThreads), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(src), static_cast<uint32_t>(count), acc, status);
  return cudaGetLastError();
}

cudaError_t launchTopkDecode(const void* src, size_t srcBytes, size_t n, DataType type, void* out,
                             int* status, cudaStream_t stream) {
  cudaError_t error = cudaSuccess;
  const long long count = checkEncoding(src, srcBytes, n, status, stream, &error);
  if (count < 0) return error;
  return withFloatElement(type, [&](auto element) -> cudaError_t {
    using E = decltype(element);
    auto* typed = static_cast<typename E::Storage*>(out);
    topkFillZeroKernel<E><<<gridFor(n, kThreads), kThreads, 0, stream>>>(typed, n, status);
    if (count > 0) {
      topkScatterKernel<E><<<gridFor(static_cast<size_t>(count), kThreads), kThreads, 0, stream>>>(
          static_cast<const unsigned char*>(src), static_cast<uint32_t>(count), typed, status);
    }
    return cudaGetLastError();
  });
}

cudaError_t preloadTopkKernels() {
  // CUB picks its scan kernels at the call, so the surest load is one small
  // run of every path (each element type's encode, a decode-accumulate and a
  // decode), on a stream of its own, waited for here.
  constexpr size_t kN = 64;
  CodecConfig config;
  config.kind = CodecKind::Topk;
  config.ratio = 0.25;
  const size_t encoded = topkEncodedBytes(kN, config);
  const size_t scratchBytes = topkEncodeScratchBytes(kN);
  if (scratchBytes == 0) return cudaErrorInvalidValue;
  const size_t srcAt = alignUp(scratchBytes);
  const size_t dstAt = srcAt + alignUp(kN * sizeof(float));
  const size_t statusAt = dstAt + alignUp(encoded);
  void* memory = nullptr;
  cudaError_t status = cudaMalloc(&memory, statusAt + kAlign);
  if (status != cudaSuccess) return status;
  auto* base = static_cast<unsigned char*>(memory);
  cudaStream_t stream = nullptr;
  status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (status == cudaSuccess) status = cudaMemsetAsync(base + srcAt, 0, kN * sizeof(float), stream);
  for (DataType type : {DataType::Float32, DataType::Float16, DataType::Bfloat16}) {
    if (status == cudaSuccess) {
      status = launchTopkEncode(base + srcAt, type, kN, base + dstAt, config, base, stream);
    }
    if (status == cudaSuccess) {
      status = launchTopkDecode(base + dstAt, encoded, kN, type, base + srcAt,
                                reinterpret_cast<int*>(base + statusAt), stream);
    }
  }
  if (status == cudaSuccess) {
    status = launchTopkDecodeAccumulate(base + dstAt, encoded, kN,
                                        reinterpret_cast<float*>(base + srcAt),
                                        reinterpret_cast<int*>(base + statusAt), stream);
  }
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
  if (stream != nullptr) cudaStreamDestroy(stream);
  cudaFree(memory);
  return status;
}

}  // namespace loom::cuda
