// The element-wise reduction operators, shared by the host loops
// (math/reduce_kernels.h) and the CUDA kernels (collectives/cuda/), so both
// compute every element with the same source and agree bit for bit.
//
// Each op combines two values of the compute type (fp16/bf16 are computed in
// float). Integer sum and product wrap modulo 2^bits (computed in the unsigned
// type, so signed overflow is not UB). Floating min/max return a NaN when
// either side is one (the first operand's NaN if both are), unlike fmin/fmax,
// so a NaN anywhere in a reduction is never silently dropped; between equal
// values (+0 and -0) they return the first operand.
//
// Everything is in an unnamed namespace on purpose: reduce_kernels.h includes
// this once per instruction set (see there), and each translation unit must get
// its own copies so the linker never merges an AVX2 instantiation into the
// baseline path.
#pragma once

#include <type_traits>

#include "math/half.h"  // LOOM_HD

namespace loom {
namespace {
namespace kernels {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

struct SumOp {
  template <typename T>
  LOOM_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return a + b;
    } else {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
  }
};

struct ProdOp {
  template <typename T>
  LOOM_HD static T apply(T a, T b) {
    if constexpr (kIsFloat<T>) {
      return a * b;
    } else {
      // Narrow unsigned types promote to int; 255 * 255 still fits, so no UB.
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    }
  }
};

/// `chosen`, unless `a` or `b` is a NaN: then that NaN (`a`'s first), so a
/// NaN anywhere in the inputs survives max and min.
template <typename T>
LOOM_HD T unlessNan(T a, T b, T chosen) {
  if constexpr (kIsFloat<T>) {
    return a != a ? a : (b != b ? b : chosen);
  } else {
    return chosen;
  }
}

struct MaxOp {
  template <typename T>
  LOOM_HD static T apply(T a, T b) {
    return unlessNan(a, b, a < b ? b : a);
  }
};

struct MinOp {
  template <typename T>
  LOOM_HD static T apply(T a, T b) {
    return unlessNan(a, b, b < a ? b : a);
  }
};

/// Avg's finalisation of one fully reduced value. Floats divide (not multiply
/// by a reciprocal) so the result is correctly rounded; integers divide in T
/// after integer promotion (int for 8-bit types, so a divisor above 127 is not
/// truncated), truncating toward zero.
template <typename T>
LOOM_HD T divideByRanks(T v, int nranks) {
  if constexpr (kIsFloat<T>) {
    return v / static_cast<T>(nranks);
  } else {
    using W = decltype(T{} + 0);
    return static_cast<T>(v / static_cast<W>(nranks));
  }
}

}  // namespace kernels
}  // namespace
}  // namespace loom
