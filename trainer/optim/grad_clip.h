// Gradient clipping by global norm. The norm is over the whole model, so every
// rank adds the squares it is responsible for (ParamStore's countInNorm
// excludes TP-replicated copies and the tied head's copy; GradientSync's
// normRanges exclude DP duplicates) and one all-reduce over the world sums them.
#pragma once

#include <vector>

#include "model/param_store.h"
#include "parallel/group_comm.h"

namespace loom::train {

/// This rank's share of the squared gradient norm.
double localGradSquares(ParamStore& store, const std::vector<Range>& ranges);
/// The global gradient norm (collective over `world`).
double globalGradNorm(ParamStore& store, const std::vector<Range>& ranges, GroupComm& world);
/// The factor that scales a gradient of norm `norm` down to `maxNorm` (1 when
/// already within it, or when clipping is off with maxNorm <= 0).
float clipFactor(double norm, double maxNorm);

}  // namespace loom::train
