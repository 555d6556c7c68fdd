#include "parallel/pipeline_runner.h"

#include <chrono>

namespace loom::train {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

PipelineResult PipelineRunner::run(const std::vector<MicroBatch>& microBatches, float gradScale,
                                   const GptStage::GradientsDone& final) {
  const StageLayout& layout = stage_.layout();
  const int m = static_cast<int>(microBatches.size());
  const size_t count = stage_.boundaryCount(microBatches.front().batch);
  const int prev = layout.stage - 1;
  const int next = layout.stage + 1;

  std::vector<StageActivations> acts(m);
  // One buffer for what the last op produced (sent before the next op runs)
  // and one for what the next op consumes.
  std::vector<float> sendBuffer(count);
  std::vector<float> recvBuffer(count);
  std::vector<Transfer> pendingSends;

  PipelineResult result;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<PipelineOp> schedule = pipelineSchedule(kind_, layout.stage, layout.stages, m);
  // Gradients are final only during the stage's last backward.
  size_t lastBackward = 0;
  for (size_t i = 0; i < schedule.size(); ++i) {
    if (schedule[i].kind != PipelineOp::kForward) lastBackward = i;
  }
  for (size_t i = 0; i < schedule.size(); ++i) {
    const PipelineOp& op = schedule[i];
    const bool forward = op.kind == PipelineOp::kForward;
    std::vector<Transfer> recvs;
    if (forward && !layout.isFirst()) recvs.push_back({recvBuffer.data(), count, prev});
    if (!forward && !layout.isLast()) recvs.push_back({recvBuffer.data(), count, next});
    pipeline_.exchange(pendingSends, recvs);
    pendingSends.clear();

    const auto opStart = std::chrono::steady_clock::now();
    const MicroBatch& mb = microBatches[op.microBatch];
    if (forward) {
      result.lossSum +=
          stage_.forward(mb, recvBuffer.data(), sendBuffer.data(), gradScale, acts[op.microBatch]);
      if (!layout.isLast()) pendingSends.push_back({sendBuffer.data(), count, next});
    } else {
      stage_.backward(mb, acts[op.microBatch], recvBuffer.data(), sendBuffer.data(),
                      i == lastBackward ? final : GptStage::GradientsDone());
      if (!layout.isFirst()) pendingSends.push_back({sendBuffer.data(), count, prev});
    }
    result.busySeconds += secondsSince(opStart);
  }
  pipeline_.exchange(pendingSends, {});
  result.wallSeconds = secondsSince(start);
  return result;
}

}  // namespace loom::train
