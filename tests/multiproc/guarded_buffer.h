// A user buffer with guard bytes on both sides, so a collective that writes
// one byte too far (or too early) is caught.
#ifndef LOOM_TESTS_MULTIPROC_GUARDED_BUFFER_H_
#define LOOM_TESTS_MULTIPROC_GUARDED_BUFFER_H_

#include <cstddef>
#include <cstring>
#include <vector>

namespace loomtest {

class GuardedBuffer {
 public:
  /// 56 is a multiple of 8 but not of 16: user pointers are only promised
  /// element alignment, so vectorised paths must cope with this one.
  static constexpr size_t kGuard = 56;
  static constexpr unsigned char kGuardByte = 0xA5;
  /// What an output region holds before the call; no pattern produces it
  /// everywhere, so an untouched output is never mistaken for a result.
  static constexpr unsigned char kPoisonByte = 0x5C;

  explicit GuardedBuffer(size_t bytes) : bytes_(bytes), storage_(bytes + 2 * kGuard, kGuardByte) {
    std::memset(data(), kPoisonByte, bytes_);
  }

  unsigned char* data() { return storage_.data() + kGuard; }
  const unsigned char* data() const { return storage_.data() + kGuard; }
  size_t bytes() const { return bytes_; }

  bool guardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (storage_[i] != kGuardByte || storage_[kGuard + bytes_ + i] != kGuardByte) return false;
    }
    return true;
  }

 private:
  size_t bytes_;
  std::vector<unsigned char> storage_;
};

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_GUARDED_BUFFER_H_
