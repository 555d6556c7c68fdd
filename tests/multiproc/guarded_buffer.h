// A user buffer with guard bytes on both sides, so a collective that writes
// one byte too far (or too early) is caught. Its memory comes from the heap,
// or from loomMemAlloc registered with a communicator (the shared buffers
// that ranks in other processes read in place).
#ifndef LOOM_TESTS_MULTIPROC_GUARDED_BUFFER_H_
#define LOOM_TESTS_MULTIPROC_GUARDED_BUFFER_H_

#include <loom/loom.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

  /// From loomMemAlloc, registered with `sharedWith`, where that is not null.
  explicit GuardedBuffer(size_t bytes, loomComm_t sharedWith = nullptr)
      : bytes_(bytes), comm_(sharedWith) {
    const size_t total = bytes + 2 * kGuard;
    if (comm_ != nullptr) {
      void* memory = nullptr;
      if (loomMemAlloc(&memory, total) != loomSuccess ||
          loomCommRegister(comm_, memory, total, &handle_) != loomSuccess) {
        throw std::runtime_error(std::string("shared test buffer: ") + loomGetLastError(comm_));
      }
      storage_ = static_cast<unsigned char*>(memory);
    } else {
      storage_ = static_cast<unsigned char*>(std::malloc(total));
      if (storage_ == nullptr) throw std::bad_alloc();
    }
    std::memset(storage_, kGuardByte, total);
    std::memset(data(), kPoisonByte, bytes_);
  }
  ~GuardedBuffer() {
    if (comm_ != nullptr) {
      loomCommDeregister(comm_, handle_);
      loomMemFree(storage_);
    } else {
      std::free(storage_);
    }
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  unsigned char* data() { return storage_ + kGuard; }
  const unsigned char* data() const { return storage_ + kGuard; }
  size_t bytes() const { return bytes_; }

  bool guardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (storage_[i] != kGuardByte || storage_[kGuard + bytes_ + i] != kGuardByte) return false;
    }
    return true;
  }

 private:
  size_t bytes_;
  loomComm_t comm_;
  void* handle_ = nullptr;
  unsigned char* storage_ = nullptr;
};

}  // namespace loomtest

#endif  // LOOM_TESTS_MULTIPROC_GUARDED_BUFFER_H_
