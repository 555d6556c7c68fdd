// The codecs' fp32 working-value kernels (device_fp32.h): grid-stride loops,
// one element per thread per step; none of them is on a hot path that the
// int8 kernels' quad loads would pay for.
#include <cstdint>

#include "compression/codec_math.h"
#include "compression/cuda/device_fp32.h"
#include "compression/cuda/kernel_launch.cuh"

namespace loom::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kTopkHeaderBytes = sizeof(uint32_t);
constexpr size_t kTopkEntryBytes = sizeof(uint32_t) + sizeof(float);

template <typename E>
__global__ void __launch_bounds__(kThreads)
    compensateKernel(const typename E::Storage* src, size_t n, float* residual, float* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float c = codec::addRn(E::widen(src[i]), residual[i]);
    out[i] = c;
    residual[i] = isfinite(c) ? c : 0.0f;
  }
}

__global__ void __launch_bounds__(kThreads)
    forgetKeptKernel(const unsigned char* encoding, size_t capacity, size_t n, float* residual) {
  uint32_t count = 0;
  memcpy(&count, encoding, sizeof count);
  const auto* indices = reinterpret_cast<const uint32_t*>(encoding + kTopkHeaderBytes);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t j = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       j < count && j < capacity; j += stride) {
    if (indices[j] < n) residual[indices[j]] = 0.0f;
  }
}

template <typename E>
__global__ void __launch_bounds__(kThreads)
    narrowKernel(const float* src, size_t n, typename E::Storage* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = E::narrow(src[i]);
  }
}

}  // namespace

cudaError_t launchCompensate(const void* src, DataType type, size_t n, float* residual, float* out,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return withFloatElement(type, [&](auto element) {
    using E = decltype(element);
    compensateKernel<E><<<gridFor(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const typename E::Storage*>(src), n, residual, out);
    return cudaGetLastError();
  });
}

cudaError_t launchTopkForgetKept(const void* encoding, size_t encodedBytes, size_t n,
                                 float* residual, cudaStream_t stream) {
  if (encodedBytes < kTopkHeaderBytes || reinterpret_cast<uintptr_t>(encoding) % 4 != 0) {
    return cudaErrorInvalidValue;
  }
  const size_t capacity = (encodedBytes - kTopkHeaderBytes) / kTopkEntryBytes;
  if (capacity == 0) return cudaSuccess;
  forgetKeptKernel<<<gridFor(capacity, kThreads), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(encoding), capacity, n, residual);
  return cudaGetLastError();
}

cudaError_t launchNarrow(const float* src, size_t n, DataType type, void* out,
                         cudaStream_t stream) {
  if (n == 0) return withFloatElement(type, [](auto) { return cudaSuccess; });
  return withFloatElement(type, [&](auto element) {
    using E = decltype(element);
    narrowKernel<E><<<gridFor(n, kThreads), kThreads, 0, stream>>>(
        src, n, static_cast<typename E::Storage*>(out));
    return cudaGetLastError();
  });
}

cudaError_t preloadFp32Kernels() {
  cudaFuncAttributes attributes{};
  for (const void* kernel : {reinterpret_cast<const void*>(compensateKernel<NativeElem<float>>),
                             reinterpret_cast<const void*>(compensateKernel<HalfElem>),
                             reinterpret_cast<const void*>(compensateKernel<Bf16Elem>),
                             reinterpret_cast<const void*>(forgetKeptKernel),
                             reinterpret_cast<const void*>(narrowKernel<NativeElem<float>>),
                             reinterpret_cast<const void*>(narrowKernel<HalfElem>),
                             reinterpret_cast<const void*>(narrowKernel<Bf16Elem>)}) {
    const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace loom::cuda
