#include "parallel/pipeline_schedule.h"

#include <algorithm>

namespace loom::train {

std::vector<PipelineOp> pipelineSchedule(ScheduleKind kind, int stage, int stages,
                                         int microBatches) {
  std::vector<PipelineOp> ops;
  const int m = microBatches;
  if (kind == ScheduleKind::kAllForwardAllBackward) {
    for (int i = 0; i < m; ++i) ops.push_back({PipelineOp::kForward, i});
    for (int i = 0; i < m; ++i) ops.push_back({PipelineOp::kBackward, i});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, m);
  for (int i = 0; i < warmup; ++i) ops.push_back({PipelineOp::kForward, i});
  for (int i = 0; i < m - warmup; ++i) {
    ops.push_back({PipelineOp::kForward, warmup + i});
    ops.push_back({PipelineOp::kBackward, i});
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back({PipelineOp::kBackward, i});
  return ops;
}

double theoreticalBubble(int stages, int microBatches) {
  return double(stages - 1) / double(microBatches + stages - 1);
}

bool parseSchedule(const std::string& text, ScheduleKind* kind) {
  if (text == "afab") {
    *kind = ScheduleKind::kAllForwardAllBackward;
  } else if (text == "1f1b") {
    *kind = ScheduleKind::kOneForwardOneBackward;
  } else {
    return false;
  }
  return true;
}

const char* scheduleName(ScheduleKind kind) {
  return kind == ScheduleKind::kAllForwardAllBackward ? "afab" : "1f1b";
}

}  // namespace loom::train
