#include "compression/error_feedback.h"

#include <algorithm>
#include <cmath>

#include "compression/codec_math.h"
#include "compression/element_io.h"
#include "core/error.h"

namespace loom {

void ErrorFeedback::checkRange(size_t offset, size_t count) const {
  if (offset > residual_.size() || count > residual_.size() - offset) {
    raise(ErrorCode::InvalidArgument,
          "error feedback: elements [{}, {}) are outside a tensor of {} elements", offset,
          offset + count, residual_.size());
  }
}

namespace feedback {

void compensate(const void* grad, DataType type, const float* residual, std::span<float> out) {
  codec::withLoader(grad, type, [&](auto load) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = codec::addRn(load(i), residual[i]);
  });
}

void update(std::span<const float> compensated, std::span<const float> decoded, float* residual) {
  for (size_t i = 0; i < compensated.size(); ++i) {
    const float d = codec::addRn(compensated[i], -decoded[i]);
    residual[i] = std::isfinite(d) ? d : 0.0f;
  }
}

}  // namespace feedback

std::span<const float> ErrorFeedback::residual() const {
  pull();
  return residual_;
}

void ErrorFeedback::pull() const {
  if (newest_ != Newest::Device) return;
  deviceCopy_->download(residual_);
  newest_ = Newest::Same;
}

void ErrorFeedback::hostWrites() {
  pull();
  if (deviceCopy_ != nullptr) newest_ = Newest::Host;
}

void ErrorFeedback::setDeviceCopy(std::unique_ptr<ResidualCopy> copy) {
  pull();
  deviceCopy_ = std::move(copy);
  newest_ = Newest::Host;
}

void ErrorFeedback::compensate(std::span<float> grad, size_t offset) const {
  checkRange(offset, grad.size());
  pull();
  const float* r = residual_.data() + offset;
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = codec::addRn(grad[i], r[i]);
}

void ErrorFeedback::compensate(const void* grad, DataType type, std::span<float> out,
                               size_t offset) const {
  checkRange(offset, out.size());
  pull();
  feedback::compensate(grad, type, residual_.data() + offset, out);
}

void ErrorFeedback::update(std::span<const float> compensated, std::span<const float> decoded,
                           size_t offset) {
  if (compensated.size() != decoded.size()) {
    raise(ErrorCode::InvalidArgument, "error feedback: {} compensated but {} decoded elements",
          compensated.size(), decoded.size());
  }
  checkRange(offset, compensated.size());
  hostWrites();
  feedback::update(compensated, decoded, residual_.data() + offset);
}

void ErrorFeedback::reset() {
  hostWrites();
  std::fill(residual_.begin(), residual_.end(), 0.0f);
}

}  // namespace loom
