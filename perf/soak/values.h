// What every rank contributes, chosen so that the exact result is known.
//
// Element e of rank r's input in one call is a pure function of (call seed,
// r, e), so any rank can recompute every other rank's input and reduce it
// locally. Reduction inputs are small integers:
//   sum        signed [-4, 4], unsigned [0, 4]: |sum| <= 4 * 31 = 124 fits int8,
//              and every partial sum is an integer below 256, exact in bf16/fp16
//   avg        integers: as sum (truncation toward zero is then well defined);
//              floats: a common value v in [-2, 2] plus +k / -k on rank pairs,
//              so the sum is exactly n * v and the average exactly v
//   prod       +1 / -1, and 2 only on ranks 0..2: |prod| <= 8
//   min, max   signed [-100, 100], unsigned [0, 200]
// so any association order Loom picks gives the same, exact result, and every
// value lies in [kMinValue, kMaxValue].
// Collectives that only copy use the full hash bits (NaN patterns included):
// a block landing at the wrong place or rank cannot go unnoticed.
#ifndef LOOM_PERF_SOAK_VALUES_H_
#define LOOM_PERF_SOAK_VALUES_H_

#include <loom/loom.h>

#include <cstdint>
#include <vector>

#include "rng.h"

namespace soak {

/// Largest world the value ranges above stay exact for.
inline constexpr int kMaxRanks = 31;
inline constexpr int64_t kMinValue = -128;
inline constexpr int64_t kMaxValue = 255;

/// Key of rank r's inputs in the call with `seed`; elements hash from it.
inline uint64_t rankKey(uint64_t seed, uint64_t r) { return hash3(seed, r, 0x5a5a); }

/// Element e of the input keyed `key` (one multiply-xorshift round per
/// element: the soak computes nranks of these per reduced element).
inline uint64_t elementHash(uint64_t key, uint64_t e) {
  return mix64(key + e * 0x9e3779b97f4a7c15ULL);
}

/// Inputs of one reduction on a world of `nranks`.
class ReductionInputs {
 public:
  ReductionInputs(loomDataType_t type, loomRedOp_t op, int nranks, uint64_t seed);
  loomDataType_t type() const { return type_; }

  /// Rank r's element e.
  int64_t value(int r, uint64_t e) const;
  /// The exact reduced element e over all ranks.
  int64_t expected(uint64_t e) const;

 private:
  loomDataType_t type_;
  loomRedOp_t op_;
  int nranks_;
  bool signed_, float_;
  std::vector<uint64_t> keys_;      // per rank
  uint64_t commonKey_;              // float avg: the common value
  std::vector<uint64_t> pairKeys_;  // float avg: +k / -k per rank pair
};

}  // namespace soak

#endif  // LOOM_PERF_SOAK_VALUES_H_
