// Pipeline schedules as data: every micro-batch runs forward then backward
// once, and 1F1B bounds the micro-batches alive on a stage.
#include <gtest/gtest.h>

#include <algorithm>

#include "parallel/pipeline_schedule.h"

namespace loom::train {
namespace {

/// Most micro-batches whose forward has run and backward has not.
int maxInFlight(const std::vector<PipelineOp>& ops) {
  int alive = 0, most = 0;
  for (const PipelineOp& op : ops) {
    alive += op.kind == PipelineOp::kForward ? 1 : -1;
    most = std::max(most, alive);
  }
  return most;
}

TEST(PipelineSchedule, EveryMicroBatchForwardThenBackwardOnce) {
  for (ScheduleKind kind :
       {ScheduleKind::kAllForwardAllBackward, ScheduleKind::kOneForwardOneBackward}) {
    for (int stages = 1; stages <= 4; ++stages) {
      for (int m = 1; m <= 6; ++m) {
        for (int s = 0; s < stages; ++s) {
          const std::vector<PipelineOp> ops = pipelineSchedule(kind, s, stages, m);
          ASSERT_EQ(ops.size(), 2u * m);
          for (int i = 0; i < m; ++i) {
            const auto f = std::find(ops.begin(), ops.end(), PipelineOp{PipelineOp::kForward, i});
            const auto b = std::find(ops.begin(), ops.end(), PipelineOp{PipelineOp::kBackward, i});
            ASSERT_TRUE(f != ops.end() && b != ops.end() && f < b);
          }
        }
      }
    }
  }
}

TEST(PipelineSchedule, OneFOneBKeepsAtMostStagesAheadAlive) {
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(maxInFlight(pipelineSchedule(ScheduleKind::kOneForwardOneBackward, s, 4, 8)), 4 - s);
    EXPECT_EQ(maxInFlight(pipelineSchedule(ScheduleKind::kAllForwardAllBackward, s, 4, 8)), 8);
  }
}

TEST(PipelineSchedule, OneFOneBOnTwoStages) {
  using Op = PipelineOp;
  const std::vector<Op> first = {{Op::kForward, 0}, {Op::kForward, 1},  {Op::kBackward, 0},
                                 {Op::kForward, 2}, {Op::kBackward, 1}, {Op::kBackward, 2}};
  EXPECT_EQ(pipelineSchedule(ScheduleKind::kOneForwardOneBackward, 0, 2, 3), first);
}

TEST(PipelineSchedule, TheoreticalBubble) {
  EXPECT_DOUBLE_EQ(theoreticalBubble(1, 4), 0.0);
  EXPECT_DOUBLE_EQ(theoreticalBubble(2, 4), 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(theoreticalBubble(4, 8), 3.0 / 11.0);
}

}  // namespace
}  // namespace loom::train
