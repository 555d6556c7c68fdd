// Error feedback: the part of a gradient that compression dropped this step is
// added back before compressing the next step, so nothing is lost, only late.
//
// The residual belongs to a tensor, not to a call: it must survive from one
// step's all-reduce of that tensor to the next one's, and two tensors must
// never share one. So the caller (the framework, one object per parameter
// tensor) owns it, and the collectives stay stateless; the C API will expose
// it as loomErrorFeedback. Not thread-safe: one tensor, one user at a time.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/types.h"

namespace loom {

class ErrorFeedback {
 public:
  /// A zero residual for a tensor of n elements.
  explicit ErrorFeedback(size_t n) : residual_(n, 0.0f) {}

  size_t size() const { return residual_.size(); }
  std::span<const float> residual() const { return residual_; }

  /// grad[i] += residual[offset + i]: call before encoding this rank's
  /// contribution. offset addresses a slice when a tensor is sent in pieces.
  void compensate(std::span<float> grad, size_t offset = 0) const;

  /// out[i] = grad[i] + residual[offset + i] for an fp32/fp16/bf16 grad, in fp32
  /// so the residual is not rounded away again by an fp16 grad's precision.
  void compensate(const void* grad, DataType type, std::span<float> out, size_t offset = 0) const;

  /// residual[offset + i] = compensated[i] - decoded[i], where compensated is
  /// what compensate() produced and decoded is decode(encode(compensated)) of
  /// this rank's own contribution. A non-finite difference (the gradient
  /// overflowed, or its int8 block was poisoned) stores 0: a loss scaler skips
  /// that step, and the residual must not carry inf/NaN into the next one.
  void update(std::span<const float> compensated, std::span<const float> decoded,
              size_t offset = 0);

  /// Forgets the residual (e.g. after a skipped step or a checkpoint reload).
  void reset();

 private:
  void checkRange(size_t offset, size_t count) const;
  std::vector<float> residual_;
};

}  // namespace loom
