// Element-wise reduction loops, written so that g++ -O3 auto-vectorises them.
//
// This header is instantiated once per instruction set (reducer_generic.cc,
// reducer_avx2.cc, compiled under different `#pragma GCC target`s), so all of
// it lives in an unnamed namespace: each translation unit gets its own
// internal copies and the linker can never merge an AVX2 instantiation into
// the baseline path. Include math/half.h and the standard headers *before*
// any target pragma so those stay baseline code that both copies may inline.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/types.h"
#include "math/half.h"
#include "math/reduce_ops.h"
#include "math/reducer.h"
#include "math/reducer_isa.h"

namespace loom {
namespace {
namespace kernels {

// ---- Native types ------------------------------------------------------------
// Three loops so every one can use restrict pointers: restrict is only valid when
// the pointers do not alias, and the interface allows dst == a or dst == b.

template <typename T, typename Op>
void loop3(T* __restrict d, const T* __restrict a, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(a[i], b[i]);
}

template <typename T, typename Op>
void loopIntoA(T* __restrict d, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(d[i], b[i]);
}

template <typename T, typename Op>
void loopIntoB(T* __restrict d, const T* __restrict a, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(a[i], d[i]);
}

template <typename T, typename Op>
void reduceNative(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  if (d == pa) {
    loopIntoA<T, Op>(d, pb, n);
  } else if (d == pb) {
    loopIntoB<T, Op>(d, pa, n);
  } else {
    loop3<T, Op>(d, pa, pb, n);
  }
}

// ---- 16-bit floats -----------------------------------------------------------
// Widen a block to float, combine in float, round back to nearest even: one
// rounding per element, exactly what a device kernel does per element, so the
// result does not depend on which side computed it. Blocks keep the float
// temporaries in L1 and give each loop a simple shape that vectorises.
//
// A converter has widen(float* out, const uint16_t* in, n) and
// narrow(uint16_t* out, const float* in, n); an ISA build may substitute its
// own (reducer_avx2.cc uses F16C instructions for fp16) as long as the bits
// produced are identical.

struct HalfConv {
  static void widen(float* __restrict out, const uint16_t* __restrict in, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = halfToFloat(in[i]);
  }
  static void narrow(uint16_t* __restrict out, const float* __restrict in, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = floatToHalf(in[i]);
  }
};

struct Bf16Conv {
  // A plain shift, without bf16ToFloat's NaN quieting: every path out goes
  // through floatToBf16, which quiets NaNs itself, so the output bits are the
  // same and the widening loop is two instructions per vector.
  static void widen(float* __restrict out, const uint16_t* __restrict in, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      out[i] = half_detail::bitsFloat(static_cast<uint32_t>(in[i]) << 16);
    }
  }
  static void narrow(uint16_t* __restrict out, const float* __restrict in, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = floatToBf16(in[i]);
  }
};

inline constexpr size_t kBlock = 256;

template <typename Conv, typename Op>
void reduceNarrow(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* pa = static_cast<const uint16_t*>(a);
  const uint16_t* pb = static_cast<const uint16_t*>(b);
  alignas(64) float fa[kBlock];
  alignas(64) float fb[kBlock];
  // Both inputs of a block are read before any of its outputs is written, so
  // dst == a or dst == b is safe.
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t m = std::min(kBlock, n - base);
    Conv::widen(fa, pa + base, m);
    Conv::widen(fb, pb + base, m);
    loopIntoA<float, Op>(fa, fb, m);
    Conv::narrow(d + base, fa, m);
  }
}

// ---- Avg finalisation --------------------------------------------------------

template <typename T>
void finalizeNative(void* data, size_t n, int nranks) {
  reducer_isa::checkAvgRanks(nranks);
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) p[i] = divideByRanks(p[i], nranks);
}

template <typename Conv>
void finalizeNarrow(void* data, size_t n, int nranks) {
  reducer_isa::checkAvgRanks(nranks);
  uint16_t* p = static_cast<uint16_t*>(data);
  alignas(64) float f[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t m = std::min(kBlock, n - base);
    Conv::widen(f, p + base, m);
    for (size_t i = 0; i < m; ++i) f[i] = divideByRanks(f[i], nranks);
    Conv::narrow(p + base, f, m);
  }
}

// ---- Tables ------------------------------------------------------------------

/// An ISA build names its 16-bit converters: struct { using Half = ...; using Bf16 = ...; }.
struct DefaultConverters {
  using Half = HalfConv;
  using Bf16 = Bf16Conv;
};

/// The reduction kernels of one op, and the Avg finalisers, by element type:
/// `native<T>` for types that compute as themselves, `narrow<Conv>` for the
/// 16-bit floats (Conv widens and narrows them).
template <typename Op>
struct ReduceKernels {
  template <typename T>
  static constexpr ReduceFn native = &reduceNative<T, Op>;
  template <typename Conv>
  static constexpr ReduceFn narrow = &reduceNarrow<Conv, Op>;
};

struct FinalizeKernels {
  template <typename T>
  static constexpr FinalizeFn native = &finalizeNative<T>;
  template <typename Conv>
  static constexpr FinalizeFn narrow = &finalizeNarrow<Conv>;
};

/// The kernel of `Kernels` for t, with the ISA build's converters `Conv`.
template <typename Conv, typename Kernels, typename Fn>
constexpr Fn kernelFor(DataType t) {
  return visitDataType(
      t,
      [](auto e) -> Fn {
        using E = decltype(e);
        if constexpr (std::is_same_v<E, element::Half>) {
          return Kernels::template narrow<typename Conv::Half>;
        } else if constexpr (std::is_same_v<E, element::Bf16>) {
          return Kernels::template narrow<typename Conv::Bf16>;
        } else {
          return Kernels::template native<typename E::Storage>;
        }
      },
      Fn{nullptr});
}

template <typename Conv, typename Op>
constexpr ReduceFn reducerForOp(DataType t) {
  return kernelFor<Conv, ReduceKernels<Op>, ReduceFn>(t);
}

/// The kernel for (t, op); Avg maps to Sum. Arguments must be in range.
template <typename Conv>
constexpr ReduceFn reducerTable(DataType t, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return reducerForOp<Conv, SumOp>(t);
    case ReduceOp::Prod:
      return reducerForOp<Conv, ProdOp>(t);
    case ReduceOp::Max:
      return reducerForOp<Conv, MaxOp>(t);
    case ReduceOp::Min:
      return reducerForOp<Conv, MinOp>(t);
  }
  return nullptr;
}

/// The Avg finaliser for t (which must be in range).
template <typename Conv>
constexpr FinalizeFn avgFinalizerTable(DataType t) {
  return kernelFor<Conv, FinalizeKernels, FinalizeFn>(t);
}

}  // namespace kernels
}  // namespace
}  // namespace loom
