// Block-wise absmax int8 quantization: the per-element math, host and device.
//
// A block of `block` elements is stored as one fp32 scale = absmax / 127 and one
// int8 code per element; an element decodes to code * scale. Codes are in
// [-127, 127]: the symmetric range keeps 0 exact and -x the mirror of x.
//
// Two corner cases are handled per block, not per element:
//  - tiny blocks: 127 / absmax overflows once absmax < 127 / FLT_MAX ~ 3.7e-37,
//    which includes every denormal, and x * inf would give NaN. Inputs are then
//    pre-multiplied by 2^64, which is exact, so the codes are as accurate as in
//    a normal block. The scale itself is denormal below 127 * FLT_MIN and keeps
//    fewer bits: decoded values there carry an extra absolute error of at most
//    127 * 2^-150 ~ 1e-43, i.e. float rounding;
//  - non-finite blocks (an inf or NaN anywhere): the scale is NaN and every code
//    0, so the whole block decodes to NaN and a sum through decodeAccumulate is
//    NaN too. A loss scaler looking for overflow then still sees it (see
//    docs/compression.md, "Non-finite values").
#pragma once

#include <cstdint>

#include "compression/codec_math.h"

namespace loom::codec {

inline constexpr float kInt8MaxCode = 127.0f;

/// What encoding one block needs, derived from the block's absmax.
struct Int8Block {
  float scale;  ///< stored in the encoding; decoded = code * scale
  float pre;    ///< exact power of two applied to inputs before `inv`
  float inv;    ///< 127 / (absmax * pre); 0 for an all-zero block
  bool finite;  ///< false: block holds inf/NaN, codes are all 0 and scale NaN
};

/// absmaxBits is the max of magnitudeBits() over the block.
LOOM_HD Int8Block int8BlockFromAbsmax(uint32_t absmaxBits) {
  Int8Block b;
  const float absmax = half_detail::bitsFloat(absmaxBits);
  b.finite = absmaxBits < kInfinityBits;
  // 2^-64 as bits: below it 127/absmax might overflow, and a 2^64 lift is safe.
  b.pre = absmaxBits < 0x1f800000u ? 0x1p64f : 1.0f;
  const float lifted = mulRn(absmax, b.pre);
  b.inv = (absmaxBits == 0u || !b.finite) ? 0.0f : kInt8MaxCode / lifted;
  // The scale is rounded down if needed so that 127 * scale <= absmax: the
  // largest code never decodes beyond the input (at FLT_MAX it would be inf).
  float scale = absmax / kInt8MaxCode;
  if (mulRn(scale, kInt8MaxCode) > absmax)
    scale = half_detail::bitsFloat(magnitudeBits(scale) - 1u);
  // The default quiet NaN as bits: std::numeric_limits is host-only under nvcc.
  b.scale = b.finite ? scale : half_detail::bitsFloat(0x7fc00000u);
  return b;
}

/// x in units of the block's quantization step, in [-127, 127] up to rounding.
LOOM_HD float int8Steps(float x, const Int8Block& b) { return mulRn(mulRn(x, b.pre), b.inv); }

/// Round to nearest (ties to even). Error <= scale / 2 plus float rounding.
LOOM_HD int8_t int8QuantizeNearest(float x, const Int8Block& b) {
  const float q = clampTo(roundNearestEven(int8Steps(x, b)), -kInt8MaxCode, kInt8MaxCode);
  return static_cast<int8_t>(static_cast<int32_t>(q));
}

/// Uniform in [0, 1) from the top 24 random bits; exact in float.
LOOM_HD float unitFromBits(uint32_t random) { return static_cast<float>(random >> 8) * 0x1p-24f; }

/// Stochastic rounding: round up with probability equal to the fractional part,
/// so E[code] = x / scale (to 2^-24 of a step) and the error is < one step.
/// frac = v - floor(v) is exact in float, so the probability is not disturbed
/// by rounding v + u.
LOOM_HD int8_t int8QuantizeStochastic(float x, const Int8Block& b, uint32_t random) {
  const float v = int8Steps(x, b);
  const float lo = floorSmall(v);
  const float frac = v - lo;
  const float up = unitFromBits(random) < frac ? 1.0f : 0.0f;
  const float q = clampTo(lo + up, -kInt8MaxCode, kInt8MaxCode);
  return static_cast<int8_t>(static_cast<int32_t>(q));
}

LOOM_HD float int8Dequantize(int8_t code, float scale) {
  return mulRn(static_cast<float>(code), scale);
}

}  // namespace loom::codec
