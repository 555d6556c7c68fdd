#include "core/page_buffer.h"

#include <unistd.h>

#include <cstring>

#include "core/error.h"

namespace loom {

size_t pageBytes() {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : 4096;
}

void* allocatePages(size_t bytes) {
  const size_t page = pageBytes();
  const size_t rounded = (bytes + page - 1) / page * page;
  void* p = std::aligned_alloc(page, rounded == 0 ? page : rounded);
  if (p != nullptr) std::memset(p, 0, rounded == 0 ? page : rounded);
  return p;
}

PageAlignedBuffer::PageAlignedBuffer(size_t bytes)
    : data_(static_cast<char*>(allocatePages(bytes))), size_(bytes) {
  if (data_ == nullptr) raise(ErrorCode::SystemError, "cannot allocate {} bytes of pages", bytes);
}

}  // namespace loom
