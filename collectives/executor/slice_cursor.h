// The slice-outer walk over a plan's steps (plan.h): iteration i runs slice i
// of every step, in order, before slice i+1. The executor and both simulators
// walk plans with this one cursor, so the order they model is the order that runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "collectives/plan.h"

namespace loom {

struct SliceCursor {
  std::vector<const Step*> steps;
  size_t sliceElements = 1;  ///< set before add()
  size_t iterations = 0;     ///< slices of the longest step
  size_t iteration = 0;
  size_t stepIndex = 0;

  /// Appends a step; iterations grow to cover its count.
  void add(const Step& step) {
    steps.push_back(&step);
    iterations = std::max(iterations, (step.count + sliceElements - 1) / sliceElements);
  }
  bool done() const { return iteration >= iterations; }
  /// First element of the current slice.
  size_t first() const { return iteration * sliceElements; }
  /// Elements of `s` in the current slice (0 once a short step has ended).
  size_t sliceCount(const Step& s) const {
    return first() >= s.count ? 0 : std::min(sliceElements, s.count - first());
  }
  void advance() {
    if (++stepIndex == steps.size()) {
      stepIndex = 0;
      ++iteration;
    }
  }
  /// Skips steps with nothing to do in this iteration.
  void skipEmpty() {
    while (!done() && sliceCount(*steps[stepIndex]) == 0) advance();
  }
};

}  // namespace loom
