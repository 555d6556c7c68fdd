// Scalar helpers shared by the codecs' host loops and a future CUDA port.
//
// Everything here is straight-line code marked LOOM_HD, so a device kernel that
// calls the same functions produces the same bits as the host. Two things would
// break that and are ruled out here: fused multiply-add contraction (nvcc fuses
// `a * b + c` by default; mulRn/addRn pin each operation to its own rounding)
// and library rounding functions whose vectorised forms differ per ISA.
#pragma once

#include <cstdint>

#include "math/half.h"  // LOOM_HD, half_detail::floatBits/bitsFloat

namespace loom::codec {

/// a * b rounded once, never fused with a neighbouring add.
LOOM_HD float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/// a + b rounded once, never fused with a neighbouring multiply.
LOOM_HD float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/// |x| as bits. For non-negative floats the unsigned order of the bit pattern is
/// the numeric order, +inf is 0x7f800000 and every NaN sorts above it, so an
/// integer max over these finds the absmax and notices non-finite values at once
/// (a float max would silently drop NaNs).
LOOM_HD uint32_t magnitudeBits(float x) { return half_detail::floatBits(x) & 0x7fffffffu; }

inline constexpr uint32_t kInfinityBits = 0x7f800000u;

/// Nearest integer, ties to even, for |v| < 2^22. Adding 1.5 * 2^23 moves v into
/// the binade whose ulp is 1, so the adder's own round-to-nearest-even does the
/// work; plain SSE2 vectorises this, unlike rintf without SSE4.1.
LOOM_HD float roundNearestEven(float v) {
  constexpr float kMagic = 0x1.8p23f;
  return addRn(addRn(v, kMagic), -kMagic);
}

/// Largest integer <= v, for |v| < 2^22.
LOOM_HD float floorSmall(float v) {
  const float r = roundNearestEven(v);
  return r > v ? r - 1.0f : r;
}

/// min(max(v, lo), hi) written so that x86 maps it onto minps/maxps.
LOOM_HD float clampTo(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

}  // namespace loom::codec
