// Zeroed memory on whole pages: what a NIC pins (ibverbs rings) and what the
// kernel's cross-process copy needs to run at full speed (single-copy scratch).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <span>

namespace loom {

size_t pageBytes();

/// `bytes` rounded up to whole pages, page-aligned and zeroed; nullptr when
/// the memory is not there. Free with std::free.
void* allocatePages(size_t bytes);

class PageAlignedBuffer {
 public:
  PageAlignedBuffer() = default;
  /// Throws SystemError when the memory is not there.
  explicit PageAlignedBuffer(size_t bytes);
  std::span<char> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

}  // namespace loom
