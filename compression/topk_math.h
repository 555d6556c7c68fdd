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
inline constexpr int kTopkMaxBins = 1 << 11;

// Functions rather than constexpr arrays: device code cannot index a host
// array at run time.
/// Where the digit of `pass` starts in the magnitude: bits 20, 9, 0.
LOOM_HD constexpr int topkDigitShift(int pass) { return pass == 0 ? 20 : (pass == 1 ? 9 : 0); }
/// Bits in the digit of `pass`: 11, 11, 9.
LOOM_HD constexpr int topkDigitBits(int pass) { return pass == 2 ? 9 : 11; }
/// Bins of the histogram of `pass`.
LOOM_HD constexpr uint32_t topkBins(int pass) { return 1u << topkDigitBits(pass); }

/// Digit of `mag` examined in `pass`.
LOOM_HD uint32_t topkDigit(uint32_t mag, int pass) {
  return (mag >> topkDigitShift(pass)) & (topkBins(pass) - 1u);
}

/// Mask of the magnitude bits fixed after passes 0..pass.
LOOM_HD uint32_t topkPrefixMask(int pass) {
  return 0x7fffffffu & ~((1u << topkDigitShift(pass)) - 1u);
}

/// An element's contribution to the counts around threshold magnitude T: 1 << 32
/// if its magnitude is above T, 1 if equal, 0 below. Summed (and prefix-summed)
/// as one 64-bit word, the high half counts "above" and the low half "equal";
/// neither half can carry into the other for chunks under 2^32 elements.
LOOM_HD uint64_t topkClassify(uint32_t mag, uint32_t threshold) {
  return mag > threshold ? (uint64_t{1} << 32) : (mag == threshold ? 1u : 0u);
}

/// Where an element lands in a top-k encoding when the selection is done in
/// parallel. `above` and `equal` count the elements before it (by index) with
/// magnitude above and equal to T; `take` is how many of the equal ones are
/// kept (the lowest indices). A kept element's entry is its rank among the
/// kept ones, above + min(equal, take), so entries come out in index order.
/// Returns false for an element that is not kept. Advances the counts.
LOOM_HD bool topkEntry(uint32_t mag, uint32_t threshold, uint32_t take, uint32_t& above,
                       uint32_t& equal, uint32_t& entry) {
  if (mag > threshold) {
    entry = above + (equal < take ? equal : take);
    ++above;
    return true;
  }
  if (mag == threshold) {
    entry = above + equal;
    return equal++ < take;
  }
  return false;
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
