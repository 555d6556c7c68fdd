// A point in time after which a wait gives up. Every blocking wait in Loom takes one.
#pragma once

#include <chrono>

namespace loom {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds d) { return Deadline(Clock::now() + d); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  /// Time left, clamped to [0, cap].
  std::chrono::milliseconds remaining(
      std::chrono::milliseconds cap = std::chrono::milliseconds::max()) const {
    const auto now = Clock::now();
    if (now >= at_) return std::chrono::milliseconds(0);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - now);
    return left < cap ? left : cap;
  }
  Clock::time_point at() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace loom
