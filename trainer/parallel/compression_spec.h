// The --compress flag: none, int8, int8:block=N, topk:R or topk:R:warmup=N (R
// the kept fraction), and the top-k sparsity warm-up it implies.
#pragma once

#include <loom/loom.h>

#include <string>

namespace loom::train {

struct CompressionSpec {
  loomCompression codec{};  ///< zero: none
  /// Top-k only: steps over which the kept fraction falls from 1 to R
  /// (exponentially). -1 means the default, a quarter of the run.
  int sparsityWarmup = -1;
};

/// A top-k entry is an index and a value, 8 bytes for a 4-byte gradient: from
/// this kept fraction on, the exact reduction sends fewer bytes.
inline constexpr double kDenseFromFraction = 0.5;

/// Parses `text` into *out; on failure returns false and says why in *error.
bool parseCompression(const std::string& text, CompressionSpec* out, std::string* error);
std::string compressionName(const CompressionSpec& spec, int totalSteps);

/// The top-k kept fraction for 0-based `step` of a `totalSteps` run: R after
/// the warm-up, R^(step / warmup) during it.
double keptFractionAt(const CompressionSpec& spec, int step, int totalSteps);
/// The warm-up length `spec` means for a run of `totalSteps` steps.
int sparsityWarmupSteps(const CompressionSpec& spec, int totalSteps);

}  // namespace loom::train
