// A POSIX shared-memory segment mapped into this process (RAII).
#pragma once

#include <cstddef>
#include <string>

namespace loom {

class ShmSegment {
 public:
  /// Creates `name` (O_EXCL) with `bytes` and maps it. Throws SystemError with a
  /// message naming the size and /dev/shm when the system refuses.
  static ShmSegment create(const std::string& name, size_t bytes);
  /// Opens an existing segment and maps it; its size must be `bytes`.
  static ShmSegment open(const std::string& name, size_t bytes);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  /// Removes the name; the memory lives on until every mapping is gone, so a
  /// crash after init leaves nothing behind in /dev/shm.
  void unlink();

  char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, char* data, size_t size, bool owner)
      : name_(std::move(name)), data_(data), size_(size), owner_(owner) {}
  void release();

  std::string name_;
  char* data_ = nullptr;
  size_t size_ = 0;
  bool owner_ = false;  // created it, so it unlinks it if still linked
  bool linked_ = false;
};

}  // namespace loom
