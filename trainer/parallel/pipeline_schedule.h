// Pipeline schedules as plain data: the order in which one stage runs the
// forward (F) and backward (B) passes of its micro-batches. Pure functions, so
// tests can check them without any ranks.
//
//   all-forward-all-backward (AFAB, GPipe): F0 F1 .. Fm-1 B0 B1 .. Bm-1.
//     Simple; keeps all m micro-batches' activations alive at once.
//   one-forward-one-backward (1F1B): stage s runs p-s-1 warm-up forwards, then
//     alternates F and B, then drains the remaining backwards. Same bubble,
//     (p-1)/(m+p-1), but at most p-s micro-batches are alive on stage s.
#pragma once

#include <string>
#include <vector>

namespace loom::train {

enum class ScheduleKind { kAllForwardAllBackward, kOneForwardOneBackward };

struct PipelineOp {
  enum Kind { kForward, kBackward } kind;
  int microBatch;
  bool operator==(const PipelineOp&) const = default;
};

std::vector<PipelineOp> pipelineSchedule(ScheduleKind kind, int stage, int stages,
                                         int microBatches);

/// (p - 1) / (m + p - 1): the idle share of an ideal pipeline with equal stages.
double theoreticalBubble(int stages, int microBatches);

/// "afab" / "1f1b"; false for anything else.
bool parseSchedule(const std::string& text, ScheduleKind* kind);
const char* scheduleName(ScheduleKind kind);

}  // namespace loom::train
