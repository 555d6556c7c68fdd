// An independent reference for the multi-rank tests: deterministic per-rank
// inputs and the results every collective must produce from them. It shares no
// code with libloom (its own half/bfloat16 conversions, its own arithmetic), so a
// bug in the library's reducers cannot hide by also being in the expectation.
#ifndef LOOM_TESTS_MULTIPROC_REFERENCE_H_
#define LOOM_TESTS_MULTIPROC_REFERENCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/loom.h"

namespace loomtest {

size_t typeSize(loomDataType_t type);
const char* typeName(loomDataType_t type);
const char* opName(loomRedOp_t op);
bool isFloatType(loomDataType_t type);
bool isSignedType(loomDataType_t type);

/// IEEE binary16 and bfloat16 <-> float, rounding to nearest even.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);

/// How inputs are made. Every pattern is a pure function of (seed, rank, index),
/// so any rank (or the reference) can recompute any other rank's input.
enum class Pattern {
  /// Small integers (signed types: -15..15, unsigned: 0..30): sums over up to 8
  /// ranks stay exact in every type, int8 and bfloat16 included.
  SmallInts,
  /// Mostly 1, sometimes 2 (and -1 for signed types): products stay within 2^4.
  ProdSafe,
  /// Random reals in [-1, 1] (in [0.5, 2] for prod), rounded to the type: results
  /// are compared with a tolerance. Float types only.
  RandomReal,
  /// Random bytes: for collectives that only move data (compared bytewise).
  RandomBytes,
};

/// Writes elements [first, first + count) of `rank`'s input into `out`.
void fillInput(void* out, loomDataType_t type, Pattern pattern, uint64_t seed, int rank,
               size_t first, size_t count, loomRedOp_t op = loomSum);

/// Expected result of reducing element [first, first + count) of every rank's
/// input with `op`. `tolerance` (optional) receives, per element, the absolute
/// error the comparison should allow (0 where the result is exact).
void reduceReference(void* out, loomDataType_t type, loomRedOp_t op, Pattern pattern, uint64_t seed,
                     int nranks, size_t first, size_t count, std::vector<double>* tolerance);

/// Compares `count` elements. With `tolerance` empty the comparison is bytewise;
/// otherwise element i may differ from `expected` by tolerance[i] (values are
/// decoded to double). Returns "" when equal, else a description of the first
/// mismatches and how many there were.
std::string compareElements(const void* got, const void* expected, loomDataType_t type,
                            size_t count, const std::vector<double>& tolerance);

/// Decodes element i of a buffer of `type` to double (exact for every type we
/// use: 64-bit integers here stay far below 2^53).
double elementAsDouble(const void* buf, loomDataType_t type, size_t i);

/// 64-bit FNV-1a, to compare results across processes without shipping them.
uint64_t hashBytes(const void* data, size_t bytes);

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_REFERENCE_H_
