// Error feedback: the part of a gradient that compression dropped this step is
// added back before compressing the next step, so nothing is lost, only late.
//
// The residual belongs to a tensor, not to a call: it must survive from one
// step's all-reduce of that tensor to the next one's, and two tensors must
// never share one. So the caller (the framework, one object per parameter
// tensor) owns it, and the collectives stay stateless; the C API will expose
// it as loomErrorFeedback. Not thread-safe: one tensor, one user at a time.
//
// On the device path the residual also lives in device memory (a
// ResidualCopy), updated there by the encode kernels; whichever side wrote
// last is the truth, and the other side fetches it before use, so a tensor
// may move between host and device calls (and loomErrorFeedbackGet) freely.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "core/types.h"

namespace loom {

/// The residual's math, shared by ErrorFeedback and by anything that applies
/// it elsewhere (the emulated device kernels), so every copy rounds alike.
namespace feedback {
/// out[i] = grad[i] + residual[i] for an fp32/fp16/bf16 grad, in fp32.
void compensate(const void* grad, DataType type, const float* residual, std::span<float> out);
/// residual[i] = compensated[i] - decoded[i], or 0 where that is not finite.
void update(std::span<const float> compensated, std::span<const float> decoded, float* residual);
}  // namespace feedback

/// A copy of a residual that a device path keeps in device memory
/// (src/compressed/device_feedback.h), so that its kernels compensate and update it
/// in place. ErrorFeedback owns it and pulls it back before the host reads.
class ResidualCopy {
 public:
  virtual ~ResidualCopy() = default;
  /// Copies the residual into `host` once the device work that last wrote it
  /// has finished.
  virtual void download(std::span<float> host) = 0;
};

class ErrorFeedback {
 public:
  /// A zero residual for a tensor of n elements.
  explicit ErrorFeedback(size_t n) : residual_(n, 0.0f) {}

  size_t size() const { return residual_.size(); }
  /// The residual as of the last call, wherever that call ran.
  std::span<const float> residual() const;

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

  /// For a device path: the device copy it made earlier (nullptr if none),
  /// and whether the host's residual changed since (the copy must be
  /// refreshed from residual() before use).
  ResidualCopy* deviceCopy() const { return deviceCopy_.get(); }
  bool hostChangedSinceCopy() const { return newest_ == Newest::Host; }
  /// Replaces the device copy (the device path uploads residual() into it).
  void setDeviceCopy(std::unique_ptr<ResidualCopy> copy);
  /// The device path enqueued work that writes the copy: from now on the
  /// host reads pull it back first.
  void deviceCopyWritten() { newest_ = Newest::Device; }
  /// The device copy equals the host's residual again (after an upload).
  void deviceCopyRefreshed() { newest_ = Newest::Same; }

 private:
  enum class Newest { Same, Host, Device };
  void checkRange(size_t offset, size_t count) const;
  /// Brings the device copy's residual back when it is the newer one.
  void pull() const;
  /// The host residual is about to change: pulled first, then newer.
  void hostWrites();
  // Mutable: reading pulls the newest copy, which the caller cannot tell
  // from a plain read.
  mutable std::vector<float> residual_;
  mutable Newest newest_ = Newest::Same;
  std::unique_ptr<ResidualCopy> deviceCopy_;
};

}  // namespace loom
