// Float buffers for activations, counted against a meter while alive, so the
// trainer can report its peak activation memory (what pipeline schedules and
// activation checkpointing change) without guessing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace loom::train {

/// Bytes of activations currently held and the most ever held at once.
class ActivationMeter {
 public:
  void add(size_t bytes) {
    current_ += bytes;
    peak_ = std::max(peak_, current_);
  }
  void release(size_t bytes) { current_ -= bytes; }
  size_t current() const { return current_; }
  size_t peak() const { return peak_; }
  void resetPeak() { peak_ = current_; }

 private:
  size_t current_ = 0;
  size_t peak_ = 0;
};

/// A zero-filled float array whose bytes count against `meter` until it is
/// destroyed or cleared. Move-only.
class ActivationBuffer {
 public:
  ActivationBuffer() = default;
  ActivationBuffer(size_t count, ActivationMeter* meter) : data_(count, 0.0f), meter_(meter) {
    if (meter_ != nullptr) meter_->add(bytes());
  }
  ActivationBuffer(ActivationBuffer&& other) noexcept
      : data_(std::move(other.data_)), meter_(std::exchange(other.meter_, nullptr)) {}
  ActivationBuffer& operator=(ActivationBuffer&& other) noexcept {
    if (this != &other) {
      clear();
      data_ = std::move(other.data_);
      meter_ = std::exchange(other.meter_, nullptr);
    }
    return *this;
  }
  ActivationBuffer(const ActivationBuffer&) = delete;
  ActivationBuffer& operator=(const ActivationBuffer&) = delete;
  ~ActivationBuffer() { clear(); }

  void clear() {
    if (meter_ != nullptr) meter_->release(bytes());
    meter_ = nullptr;
    std::vector<float>().swap(data_);
  }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  size_t size() const { return data_.size(); }
  size_t bytes() const { return data_.size() * sizeof(float); }
  bool empty() const { return data_.empty(); }

 private:
  std::vector<float> data_;
  ActivationMeter* meter_ = nullptr;
};

}  // namespace loom::train
