// Top-k selection: the ordering and the radix-select digits, host and device.
//
// Elements are ranked by magnitudeBits(): larger |x| first, NaN above +inf above
// every finite value, and on equal magnitude the lower index first. That is a
// strict total order, so "the k largest" is one exact set on every rank and
// device. Selection is a radix select over the 31 magnitude bits in three
// digit passes (11 + 11 + 9 bits): each pass histograms the digit of the
// elements that still match the chosen prefix, which is how a GPU top-k works
// too, and needs no scratch copy of the chunk on the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compression/codec_math.h"

namespace loom::codec {

inline constexpr int kTopkPasses = 3;
inline constexpr int kTopkDigitShift[kTopkPasses] = {20, 9, 0};
inline constexpr int kTopkDigitBits[kTopkPasses] = {11, 11, 9};
inline constexpr int kTopkMaxBins = 1 << 11;

/// Digit of `mag` examined in `pass`.
LOOM_HD uint32_t topkDigit(uint32_t mag, int pass) {
  return (mag >> kTopkDigitShift[pass]) & ((1u << kTopkDigitBits[pass]) - 1u);
}

/// Mask of the magnitude bits fixed after passes 0..pass.
LOOM_HD uint32_t topkPrefixMask(int pass) {
  return 0x7fffffffu & ~((1u << kTopkDigitShift[pass]) - 1u);
}

/// Elements kept from a chunk of n: ceil(ratio * n), at least 1, at most n.
/// The ceiling makes `ratio` a floor on the kept fraction; the 1 makes every
/// non-empty chunk send its largest element, so no chunk is ever silent. The
/// product is nudged down by 1e-12 relative so that ratios like 0.01, which are
/// not exact in binary, give k = n / 100 when n is a multiple of 100.
LOOM_HD size_t topkKeptCount(size_t n, double ratio) {
  if (n == 0) return 0;
  const double want = ratio * static_cast<double>(n);
  size_t k = static_cast<size_t>(want * (1.0 - 1e-12));
  if (static_cast<double>(k) < want * (1.0 - 1e-12)) ++k;  // ceiling
  if (k < 1) k = 1;
  return k < n ? k : n;
}

}  // namespace loom::codec
