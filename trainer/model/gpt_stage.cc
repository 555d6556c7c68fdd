#include "model/gpt_stage.h"

#include <algorithm>

namespace loom::train {

std::vector<std::vector<ParamSpec>> GptStage::paramSegments(const ModelConfig& config,
                                                            const StageLayout& layout) {
  std::vector<std::vector<ParamSpec>> segments;
  if (layout.isFirst() || layout.isLast()) {
    // The last stage's copy is counted in the gradient norm by the first stage.
    segments.push_back(tokenEmbeddingSpecs(config, layout.isFirst()));
  }
  std::vector<ParamSpec> rest;
  if (layout.isFirst()) rest = positionEmbeddingSpecs(config);
  for (int layer = layout.firstLayer; layer < layout.endLayer; ++layer) {
    std::vector<ParamSpec> block = blockParamSpecs(config, layer);
    rest.insert(rest.end(), block.begin(), block.end());
  }
  if (layout.isLast()) {
    std::vector<ParamSpec> norm = finalNormSpecs(config);
    rest.insert(rest.end(), norm.begin(), norm.end());
  }
  segments.push_back(std::move(rest));
  return segments;
}

GptStage::GptStage(const ModelConfig& config, const StageLayout& layout, GroupComm& tp,
                   size_t padMultiple, bool checkpointActivations)
    : config_(config),
      layout_(layout),
      checkpoint_(checkpointActivations),
      store_(paramSegments(config, layout), tp.rank(), tp.size(), padMultiple) {
  for (int layer = layout.firstLayer; layer < layout.endLayer; ++layer) {
    blocks_.emplace_back(config, layer, store_, tp);
  }
  if (layout.isFirst()) embedding_ = std::make_unique<Embedding>(config, store_);
  if (layout.isLast()) head_ = std::make_unique<LmHead>(config, store_);
  auto firstOffset = [&](const std::vector<ParamSpec>& specs) {
    size_t first = SIZE_MAX;
    for (const ParamSpec& spec : specs) {
      first = std::min(first, store_.param(store_.index(spec.name)).offset);
    }
    return first;
  };
  for (int layer = layout.firstLayer; layer < layout.endLayer; ++layer) {
    blockStarts_.push_back(firstOffset(blockParamSpecs(config, layer)));
  }
  headStart_ = layout.isLast() ? firstOffset(finalNormSpecs(config)) : store_.size();
}

size_t GptStage::boundaryCount(int batch) const {
  return static_cast<size_t>(batch) * config_.seq * config_.dModel;
}

double GptStage::forward(const MicroBatch& mb, const float* input, float* output, float gradScale,
                         StageActivations& acts) {
  const size_t count = boundaryCount(mb.batch);
  const size_t layers = blocks_.size();
  acts.inputs.clear();
  acts.blocks.clear();
  for (size_t l = 0; l < layers; ++l) acts.inputs.emplace_back(count, &meter_);
  if (!checkpoint_) acts.blocks.resize(layers);

  if (embedding_) {
    embedding_->forward(mb.tokens.data(), mb.batch, acts.inputs[0].data());
  } else {
    std::copy(input, input + count, acts.inputs[0].data());
  }
  if (head_) acts.output = ActivationBuffer(count, &meter_);
  float* stageOut = head_ ? acts.output.data() : output;
  for (size_t l = 0; l < layers; ++l) {
    float* out = l + 1 < layers ? acts.inputs[l + 1].data() : stageOut;
    if (checkpoint_) {
      BlockActivations discarded;  // recomputed in backward; only the input is kept
      blocks_[l].forward(acts.inputs[l].data(), mb.batch, out, discarded, &meter_);
    } else {
      blocks_[l].forward(acts.inputs[l].data(), mb.batch, out, acts.blocks[l], &meter_);
    }
  }
  if (!head_) return 0.0;
  return head_->forward(acts.output.data(), mb.targets.data(), mb.batch, gradScale, acts.head,
                        &meter_);
}

void GptStage::backward(const MicroBatch& mb, StageActivations& acts, const float* dOutput,
                        float* dInput, const GradientsDone& done) {
  auto report = [&](size_t offset) {
    if (done) done(offset);
  };
  const size_t count = boundaryCount(mb.batch);
  std::vector<float> grad(count);
  std::vector<float> gradIn(count);
  if (head_) {
    head_->backward(acts.output.data(), mb.batch, acts.head, grad.data());
    acts.head = HeadActivations();
    acts.output.clear();
    report(headStart_);
  } else {
    std::copy(dOutput, dOutput + count, grad.begin());
  }
  for (size_t l = blocks_.size(); l-- > 0;) {
    if (checkpoint_) {
      BlockActivations recomputed;
      std::vector<float> scratch(count);
      blocks_[l].forward(acts.inputs[l].data(), mb.batch, scratch.data(), recomputed, &meter_);
      blocks_[l].backward(acts.inputs[l].data(), mb.batch, recomputed, grad.data(), gradIn.data());
    } else {
      blocks_[l].backward(acts.inputs[l].data(), mb.batch, acts.blocks[l], grad.data(),
                          gradIn.data());
      acts.blocks[l] = BlockActivations();
    }
    acts.inputs[l].clear();
    grad.swap(gradIn);
    report(blockStarts_[l]);
  }
  if (embedding_) {
    embedding_->backward(mb.tokens.data(), mb.batch, grad.data());
    report(store_.segments().back().begin);
  } else {
    std::copy(grad.begin(), grad.end(), dInput);
  }
}

}  // namespace loom::train
