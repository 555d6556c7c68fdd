#include "optim/grad_clip.h"

#include <algorithm>
#include <cmath>

#include "math/kernels.h"

namespace loom::train {

double localGradSquares(ParamStore& store, const std::vector<Range>& ranges) {
  double sum = 0;
  const float* g = store.grads().data();
  for (const Range& r : ranges) {
    for (const Param& p : store.params()) {
      if (!p.countInNorm) continue;
      const size_t begin = std::max(r.begin, p.offset);
      const size_t end = std::min(r.end, p.offset + p.size());
      if (begin < end) sum += math::sumSquares(g + begin, end - begin);
    }
  }
  return sum;
}

double globalGradNorm(ParamStore& store, const std::vector<Range>& ranges, GroupComm& world) {
  double squares = localGradSquares(store, ranges);
  world.allReduce(&squares, 1);
  return std::sqrt(squares);
}

float clipFactor(double norm, double maxNorm) {
  if (maxNorm <= 0 || norm <= maxNorm) return 1.0f;
  return static_cast<float>(maxNorm / (norm + 1e-6));
}

}  // namespace loom::train
