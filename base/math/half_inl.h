// Inline definitions for math/half.h. Include math/half.h, not this file.
//
// Every conversion is written as straight-line integer code plus selects (no
// loops, no table lookups, no data-dependent branches the compiler cannot
// if-convert), for two reasons: the same source compiles for CUDA devices, and
// host loops that call these per element auto-vectorise.
//
// NaN rule (both directions, both formats): the sign and the leading payload
// bits are kept and the quiet bit is set, as x86 F16C and ARM conversions do.
#pragma once

#include <cstdint>

namespace loom {
namespace half_detail {

LOOM_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);  // not std::bit_cast: nvcc may be in C++17 mode
#endif
}

LOOM_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// cond ? a : b as bit masks. Plain ?: lets the optimiser sink the float math
// feeding one side into a branch, and then (because float ops may trap) it
// refuses to if-convert the loop, which blocks vectorisation.
LOOM_HD uint32_t selectBits(bool cond, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (a & mask) | (b & ~mask);
}

inline constexpr uint32_t kFloatQuietBit = 0x00400000u;
inline constexpr uint32_t kFloatExpMask = 0x7f800000u;

}  // namespace half_detail

LOOM_HD float halfToFloat(uint16_t h) {
  using namespace half_detail;
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t mag = h & 0x7fffu;  // exponent and mantissa
  // Normal numbers: move the fields into place and rebias the exponent 15 -> 127.
  uint32_t bits = (mag << 13) + ((127u - 15u) << 23);
  // Inf/NaN: the exponent saturates; a NaN also gets the quiet bit.
  const uint32_t special =
      (mag << 13) | kFloatExpMask | selectBits(mag > 0x7c00u, kFloatQuietBit, 0u);
  bits = selectBits(mag >= 0x7c00u, special, bits);
  // Zero and subnormals are mantissa * 2^-24; the integer converts exactly and
  // the product is a normal float, so this is exact even with flush-to-zero.
  const uint32_t tiny = floatBits(static_cast<float>(static_cast<int32_t>(mag)) * 0x1p-24f);
  bits = selectBits(mag < 0x0400u, tiny, bits);
  return bitsFloat(sign | bits);
}

LOOM_HD uint16_t floatToHalf(float f) {
  using namespace half_detail;
  const uint32_t x = floatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;

  // Normal range: rebias the exponent 127 -> 15 and round the 13 dropped
  // mantissa bits to nearest even by adding 0xfff plus the kept lsb; a carry
  // out of the mantissa correctly bumps the exponent.
  const uint32_t lsb = (ax >> 13) & 1u;
  uint32_t out = (ax - ((127u - 15u) << 23) + 0xfffu + lsb) >> 13;

  // Below 2^-14 the result is subnormal (or zero). Adding 0.5f puts the value
  // into a binade whose ulp is 2^-24, the half subnormal step, so the FPU's
  // round-to-nearest-even does the rounding; the low bits are the result.
  // Float subnormal inputs round to zero either way, so flush-to-zero is harmless.
  const float small = bitsFloat(ax) + 0.5f;
  const uint32_t sub = floatBits(small) - floatBits(0.5f);
  out = selectBits(ax < 0x38800000u, sub, out);

  // 65520 (0x477ff000) is the midpoint between the largest half, 65504, and
  // 2^16; ties go to the even neighbour, which is infinity.
  out = selectBits(ax >= 0x477ff000u, 0x7c00u, out);
  const uint32_t nan = 0x7e00u | ((ax >> 13) & 0x03ffu);
  out = selectBits(ax > kFloatExpMask, nan, out);
  return static_cast<uint16_t>(sign | out);
}

LOOM_HD float bf16ToFloat(uint16_t b) {
  using namespace half_detail;
  // bfloat16 is the top half of a float; only NaNs need the quiet bit.
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  const bool nan = (bits & 0x7fffffffu) > kFloatExpMask;
  return bitsFloat(nan ? (bits | kFloatQuietBit) : bits);
}

LOOM_HD uint16_t floatToBf16(float f) {
  using namespace half_detail;
  const uint32_t x = floatBits(f);
  // Round the 16 dropped bits to nearest even. Finite values that round past
  // the largest bfloat16 carry into the exponent and become infinity, as IEEE
  // rounding requires; subnormals need nothing special (same exponent range).
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t nan = (x >> 16) | 0x0040u;
  const bool isNan = (x & 0x7fffffffu) > kFloatExpMask;
  return static_cast<uint16_t>(isNan ? nan : rounded);
}

}  // namespace loom
