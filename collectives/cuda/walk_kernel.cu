// The plan walker on the GPU: one thread block per channel runs
// collectives/walker/plan_walker.h, the same source the host tests run with
// std::threads (tests/unit/test_plan_walker.cc). This file only supplies the
// block as a Team: barriers, acquire/release on the FIFO words (at system
// scope when a peer is another GPU, process or the host's proxy; at device
// scope when every peer shares this device and process), the global timer for
// deadlines, and shared memory for the message counters.
//
// One kernel per element type (10); the op is a runtime argument switched per
// slice inside the walker, as in reduce_kernel.cu.
#include <cuda/atomic>

#include "collectives/cuda/walk_launch.h"
#include "collectives/walker/plan_walker.h"
#include "device/element_types.cuh"

namespace loom::cuda {
namespace {

inline constexpr int kWalkThreads = 512;

/// A thread block as the walker's Team. Members are __host__ __device__ only
/// so that the walker's host-and-device methods may call them; the kernel is
/// the only caller.
struct BlockTeam {
  uint64_t* shared;
  bool system;  ///< WalkArgs::systemScope

  __host__ __device__ int index() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  __host__ __device__ int size() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(blockDim.x);
#else
    return 1;
#endif
  }
  __host__ __device__ void sync() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
  __host__ __device__ bool syncOr(bool mine) const {
#if defined(__CUDA_ARCH__)
    return __syncthreads_or(mine ? 1 : 0) != 0;
#else
    return mine;
#endif
  }
  // Acquire and release at the scope the walk's peers need: a system-scope
  // release waits until this block's writes are visible to every device and
  // the host, several times the cost of a device-scope one, once per message.
  __host__ __device__ uint64_t loadAcquire(const uint64_t* p) const {
    auto* word = const_cast<uint64_t*>(p);
    if (system) {
      return ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_system>(*word).load(
          ::cuda::memory_order_acquire);
    }
    return ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_device>(*word).load(
        ::cuda::memory_order_acquire);
  }
  __host__ __device__ void storeRelease(uint64_t* p, uint64_t v) const {
    if (system) {
      ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_system>(*p).store(
          v, ::cuda::memory_order_release);
    } else {
      ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_device>(*p).store(
          v, ::cuda::memory_order_release);
    }
  }
  // Relaxed accesses order nothing, so system scope costs nothing extra; it
  // keeps a low-latency line's loads and stores whole for every reader.
  __host__ __device__ static uint64_t loadRelaxed(const uint64_t* p) {
    ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_system> word(*const_cast<uint64_t*>(p));
    return word.load(::cuda::memory_order_relaxed);
  }
  __host__ __device__ static void storeRelaxed(uint64_t* p, uint64_t v) {
    ::cuda::atomic_ref<uint64_t, ::cuda::thread_scope_system> word(*p);
    word.store(v, ::cuda::memory_order_relaxed);
  }
  __host__ __device__ static bool aborted(const volatile uint32_t* word) { return *word != 0; }
  __host__ __device__ static bool claim(uint32_t* word, uint32_t value) {
    ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> status(*word);
    uint32_t expected = 0;
    return status.compare_exchange_strong(expected, value);
  }
  __host__ __device__ static uint64_t nowNs() {
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    return 0;
#endif
  }
  // A short sleep between polls leaves issue slots to the peer blocks that
  // share this SM (several ranks on one GPU).
  __host__ __device__ static void relax() {
#if defined(__CUDA_ARCH__)
    __nanosleep(64);
#endif
  }
  __host__ __device__ uint64_t* counters() const { return shared; }
  // A warp: kWalkThreads is a multiple of 32, and the walker calls laneMax
  // with the whole warp converged (its loops are warp-uniform there).
  __host__ __device__ static int laneCount() {
#if defined(__CUDA_ARCH__)
    return 32;
#else
    return 1;
#endif
  }
  __host__ __device__ static uint32_t laneMax(uint32_t v) {
#if defined(__CUDA_ARCH__)
    return __reduce_max_sync(0xffffffffu, v);
#else
    return v;
#endif
  }
};

template <typename E>
__global__ void __launch_bounds__(kWalkThreads) walkKernel(const walk::WalkArgs* args) {
  __shared__ uint64_t counters[2 * walk::kMaxConnections];
  BlockTeam team{counters, args->systemScope != 0};
  walk::PlanWalker<BlockTeam, E> walker(team, *args, blockIdx.x);
  walker.run();
}

template <typename E>
cudaError_t launchFor(const walk::WalkArgs* args, unsigned channels, cudaStream_t stream) {
  walkKernel<E><<<channels, kWalkThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

/// Asks for each instantiation's attributes, which loads it: with lazy module
/// loading (the default since CUDA 12.2) a kernel's first launch may wait for
/// the whole context, and a walk kernel never finishes before its peers
/// launched theirs.
template <typename... Es>
cudaError_t loadAll() {
  cudaError_t status = cudaSuccess;
  cudaFuncAttributes attributes{};
  ((status = status == cudaSuccess ? cudaFuncGetAttributes(&attributes, walkKernel<Es>) : status),
   ...);
  return status;
}

/// The fewest blocks per SM of the instantiations (registers differ by type).
template <typename... Es>
cudaError_t fewestBlocksPerSm(int* fewest) {
  cudaError_t status = cudaSuccess;
  *fewest = 1 << 30;
  auto one = [&](auto kernel) {
    int blocks = 0;
    if (status != cudaSuccess) return;
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWalkThreads, 0);
    *fewest = blocks < *fewest ? blocks : *fewest;
  };
  (one(walkKernel<Es>), ...);
  return status;
}

}  // namespace

cudaError_t walkResidentBlocks(int* blocks) {
  int device = 0;
  int sms = 0;
  int perSm = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) {
    status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  if (status == cudaSuccess) {
    status = fewestBlocksPerSm<NativeElem<int8_t>, NativeElem<uint8_t>, NativeElem<int32_t>,
                               NativeElem<uint32_t>, NativeElem<int64_t>, NativeElem<uint64_t>,
                               HalfElem, NativeElem<float>, NativeElem<double>, Bf16Elem>(&perSm);
  }
  *blocks = status == cudaSuccess ? sms * perSm : 0;
  return status;
}

cudaError_t preloadWalkKernels() {
  return loadAll<NativeElem<int8_t>, NativeElem<uint8_t>, NativeElem<int32_t>, NativeElem<uint32_t>,
                 NativeElem<int64_t>, NativeElem<uint64_t>, HalfElem, NativeElem<float>,
                 NativeElem<double>, Bf16Elem>();
}

cudaError_t launchWalk(const walk::WalkArgs* args, DataType type, unsigned channels,
                       cudaStream_t stream) {
  if (args == nullptr || channels == 0) return cudaErrorInvalidValue;
  return withElement(type,
                     [&](auto elem) { return launchFor<decltype(elem)>(args, channels, stream); });
}

}  // namespace loom::cuda
