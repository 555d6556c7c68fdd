// From resolved options to a ranked plan: loads or detects the topology,
// places the ranks, enumerates and predicts every layout.
#pragma once

#include "planner_options.h"
#include "report.h"

namespace loom::plan {

/// Throws Error(InvalidArgument) for a GPU count the topology cannot place or
/// a --layout that is not valid for the model.
PlanResult makePlan(const PlannerOptions& options);

}  // namespace loom::plan
