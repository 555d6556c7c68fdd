// Reduction and Avg-finalise kernels: one kernel per element type (ten in all,
// each compiled for sm_80 and sm_90), with the operator a runtime argument.
//
// Why not one kernel per (type, op): the op is the same for every thread of a
// launch, so the switch below is taken once per thread, before the loop, and
// each case is the fully specialised loop; that keeps the code as fast as a
// template on the op while the number of kernels (and of device link entries)
// stays 10 instead of 40, and adding a protocol later multiplies 10, not 40.
#include "collectives/cuda/device_reduce.h"
#include "collectives/cuda/element_map.cuh"
#include "math/reduce_ops.h"

namespace loom::cuda {
namespace {

template <typename E, typename Op>
struct Combine {
  __device__ typename E::Storage operator()(typename E::Storage x, typename E::Storage y) const {
    return E::narrow(Op::template apply<typename E::Compute>(E::widen(x), E::widen(y)));
  }
};

template <typename E>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(typename E::Storage* dst, const typename E::Storage* a,
                 const typename E::Storage* b, size_t n, ReduceOp op) {
  using namespace kernels;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return mapElements<true>(dst, a, b, n, Combine<E, SumOp>{});
    case ReduceOp::Prod:
      return mapElements<true>(dst, a, b, n, Combine<E, ProdOp>{});
    case ReduceOp::Max:
      return mapElements<true>(dst, a, b, n, Combine<E, MaxOp>{});
    case ReduceOp::Min:
      return mapElements<true>(dst, a, b, n, Combine<E, MinOp>{});
  }
}

template <typename E>
struct DivideByRanks {
  int nranks;
  __device__ typename E::Storage operator()(typename E::Storage x) const {
    return E::narrow(kernels::divideByRanks(E::widen(x), nranks));
  }
};

template <typename E>
__global__ void __launch_bounds__(kThreads)
    avgFinalizeKernel(typename E::Storage* data, size_t n, int nranks) {
  mapElements<false>(data, data, data, n, DivideByRanks<E>{nranks});
}

}  // namespace

cudaError_t launchReduce(void* dst, const void* a, const void* b, size_t n, DataType type,
                         ReduceOp op, cudaStream_t stream) {
  if (static_cast<int>(op) >= kNumReduceOps) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return withElement(type, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::Storage;
    reduceKernel<E><<<gridFor(n / Pack<S>::kCount + 1), kThreads, 0, stream>>>(
        static_cast<S*>(dst), static_cast<const S*>(a), static_cast<const S*>(b), n, op);
    return cudaGetLastError();
  });
}

cudaError_t launchAvgFinalize(void* data, size_t n, DataType type, int nranks,
                              cudaStream_t stream) {
  if (nranks < 1) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return withElement(type, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::Storage;
    avgFinalizeKernel<E><<<gridFor(n / Pack<S>::kCount + 1), kThreads, 0, stream>>>(
        static_cast<S*>(data), n, nranks);
    return cudaGetLastError();
  });
}

cudaError_t preloadAvgFinalizeKernels() {
  cudaFuncAttributes attributes{};
  // The fp32 one is what the kernel path's compressed collectives launch.
  return cudaFuncGetAttributes(&attributes, avgFinalizeKernel<NativeElem<float>>);
}

}  // namespace loom::cuda
