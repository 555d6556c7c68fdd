// `loom-topo --simulate ... --json`: the scaling table as JSON, for scripts
// (perf/plot_scaling.py) that would otherwise parse the printed table.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "tools/simulate/scaling_table.h"

namespace loomtopo {

/// {"source", "collective", "bytes", "rows": [{"ranks", "hosts", "channels",
/// "candidates": [{"name", "us", "busbw_gbps"[, "simulated_us"]}], "pick":
/// {"name", "us", "chunk_bytes"}}]}; times in microseconds, null where the
/// model has none.
void printScalingJson(std::ostream& out, const std::string& source,
                      const std::vector<loom::tuner::ScalingRow>& rows,
                      const loom::tuner::ScalingOptions& options);

}  // namespace loomtopo
