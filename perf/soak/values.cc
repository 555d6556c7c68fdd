#include "values.h"

#include <algorithm>

#include "types.h"

namespace soak {

namespace {

// Uniform integer in [lo, hi] from hash bits (lo, hi are constants at every
// call, so the modulo compiles to multiplies).
inline int64_t pick(uint64_t h, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(h % static_cast<uint64_t>(hi - lo + 1));
}

}  // namespace

ReductionInputs::ReductionInputs(loomDataType_t type, loomRedOp_t op, int nranks, uint64_t seed)
    : type_(type),
      op_(op),
      nranks_(nranks),
      signed_(isSigned(type)),
      float_(isFloat(type)),
      commonKey_(rankKey(seed, ~0ULL)) {
  for (int r = 0; r < nranks; ++r) keys_.push_back(rankKey(seed, static_cast<uint64_t>(r)));
  for (int p = 0; p < (nranks + 1) / 2; ++p) pairKeys_.push_back(rankKey(seed, ~1ULL - p));
}

int64_t ReductionInputs::value(int r, uint64_t e) const {
  const uint64_t h = elementHash(keys_[static_cast<size_t>(r)], e);
  switch (op_) {
    case loomSum:
      return signed_ ? pick(h, -4, 4) : pick(h, 0, 4);
    case loomAvg: {
      if (!float_) return signed_ ? pick(h, -4, 4) : pick(h, 0, 4);
      // Ranks 2j and 2j+1 add +k and -k; an odd last rank adds nothing.
      const int64_t common = pick(elementHash(commonKey_, e), -2, 2);
      if (r == nranks_ - 1 && nranks_ % 2 == 1) return common;
      const int64_t k = pick(elementHash(pairKeys_[static_cast<size_t>(r / 2)], e), -2, 2);
      return common + (r % 2 == 0 ? k : -k);
    }
    case loomProd:
      if (r < 3 && h % 4 == 0) return 2;
      return (signed_ && (h >> 8) % 2 == 1) ? -1 : 1;
    case loomMax:
    case loomMin:
    default:
      return signed_ ? pick(h, -100, 100) : pick(h, 0, 200);
  }
}

int64_t ReductionInputs::expected(uint64_t e) const {
  int64_t acc = value(0, e);
  for (int r = 1; r < nranks_; ++r) {
    const int64_t v = value(r, e);
    switch (op_) {
      case loomProd:
        acc *= v;
        break;
      case loomMax:
        acc = std::max(acc, v);
        break;
      case loomMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  // C++ division truncates toward zero, which is Loom's integer avg; for floats
  // the sum is a multiple of nranks by construction.
  if (op_ == loomAvg) acc /= nranks_;
  return acc;
}

}  // namespace soak
