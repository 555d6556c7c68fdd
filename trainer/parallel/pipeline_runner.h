// Runs one training step's micro-batches through this rank's pipeline stage in
// schedule order, moving activations forward and their gradients backward.
//
// Communication happens between ops, as one Loom group holding the previous
// op's send and the next op's receive. Under 1F1B two neighbouring stages then
// post "send activation i / receive gradient j" and "send gradient j / receive
// activation i" as matching groups, so neither blocks the other even when a
// send cannot complete before its receive is posted.
#pragma once

#include <vector>

#include "model/gpt_stage.h"
#include "parallel/group_comm.h"
#include "parallel/pipeline_schedule.h"

namespace loom::train {

struct PipelineResult {
  double lossSum = 0;      ///< summed token losses (last stage; 0 elsewhere)
  double busySeconds = 0;  ///< time in forward/backward compute (TP collectives included)
  double wallSeconds = 0;  ///< the whole pipeline phase, waits included
};

class PipelineRunner {
 public:
  PipelineRunner(GptStage& stage, GroupComm& pipeline, ScheduleKind kind)
      : stage_(stage), pipeline_(pipeline), kind_(kind) {}

  /// Forward and backward of every micro-batch; parameter gradients accumulate
  /// in the stage's store. gradScale = 1 / tokens in the global batch. `final`
  /// (may be empty) hears, during the step's last backward, from which offset
  /// the last segment's gradients are complete (GptStage::GradientsDone).
  PipelineResult run(const std::vector<MicroBatch>& microBatches, float gradScale,
                     const GptStage::GradientsDone& final = {});

 private:
  GptStage& stage_;
  GroupComm& pipeline_;
  ScheduleKind kind_;
};

}  // namespace loom::train
