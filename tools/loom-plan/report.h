// The ways a plan is shown: an aligned table with the reasons the best wins,
// CSV and JSON of every layout, and an SVG bar chart of predicted step times.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "model_shape.h"
#include "predictor.h"

namespace loom::plan {

struct PlanResult {
  ModelShape model;
  std::string topology;  ///< the file's source line, or "this machine"
  int gpus = 0;
  Hardware hardware;
  std::vector<Prediction> ranked;  ///< rankLayouts' order
  /// --layout: its prediction and 1-based place in `ranked` (0: not among them).
  std::optional<Prediction> asked;
  int askedPlace = 0;
};

void printTable(std::ostream& out, const PlanResult& plan, int top);
void printCsv(std::ostream& out, const PlanResult& plan);
void printJson(std::ostream& out, const PlanResult& plan, int top);
/// Horizontal bars of the `top` fitting layouts' step time, split into
/// compute, TP, bubble, PP and DP. Throws Error(SystemError) when it cannot write.
void writeSvg(const std::string& path, const PlanResult& plan, int top);

}  // namespace loom::plan
