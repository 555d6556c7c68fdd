// Filling inputs with predictable data and counting output elements that differ
// from what the collective must produce.
#ifndef LOOM_PERF_COMMON_CHECK_H_
#define LOOM_PERF_COMMON_CHECK_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "collectives.h"
#include "types.h"

namespace perf {

inline void fillInput(PerfType type, void* buffer, size_t elems, int rank, PerfOp fillOp) {
  visitType(type, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(buffer);
    // Values repeat with kValuePeriod, so convert one period and copy it around.
    T period[kValuePeriod];
    for (size_t i = 0; i < kValuePeriod; ++i) {
      period[i] = fromDouble<T>(inputValue(rank, i, fillOp));
    }
    for (size_t i = 0; i < elems; ++i) out[i] = period[i % kValuePeriod];
  });
}

/// Relative tolerance: integers must match exactly; floating types allow a few
/// roundings of avg's division (sum-of-small-integers results are exact anyway).
inline double tolerance(PerfType type) {
  switch (type) {
    case PerfType::Half:
      return 4e-3;
    case PerfType::Bf16:
      return 3e-2;
    case PerfType::Float:
      return 1e-6;
    case PerfType::Double:
      return 1e-12;
    default:
      return 0.0;
  }
}

/// Number of output elements of ctx.rank that are wrong (0 where the rank has none).
inline int64_t countWrong(PerfType type, const void* output, size_t elems,
                          const ExpectContext& ctx) {
  if (!hasOutput(ctx.coll, ctx.rank, ctx.root)) return 0;
  const double tol = tolerance(type);
  return visitType(type, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    const T* got = static_cast<const T*>(output);
    int64_t wrong = 0;
    for (size_t j = 0; j < elems; ++j) {
      // Round the expectation through T so it is what a correct T result holds.
      const double want = toDouble(fromDouble<T>(expectedOutput(ctx, j)));
      const double have = toDouble(got[j]);
      if (!(std::fabs(have - want) <= tol * std::max(1.0, std::fabs(want)))) ++wrong;
    }
    return wrong;
  });
}

}  // namespace perf

#endif  // LOOM_PERF_COMMON_CHECK_H_
