#include "comm/buffer_registry.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace loom {

BufferRegistry::~BufferRegistry() {
  for (const auto& e : entries_) {
    if (e->header != nullptr) {
      munmap(const_cast<SharedBufferHeader*>(e->header), sharedBufferPage());
    }
  }
}

void* BufferRegistry::add(const void* buff, size_t bytes) {
  auto entry = std::make_unique<Entry>();
  entry->begin = static_cast<const char*>(buff);
  entry->bytes = bytes;
  if (const SharedBufferHeader* header = findSharedBuffer(buff, bytes)) {
    void* own = mmap(nullptr, sharedBufferPage(), PROT_READ, MAP_SHARED, header->fd, 0);
    if (own != MAP_FAILED) {
      entry->header = static_cast<const SharedBufferHeader*>(own);
      entry->file.fd = header->fd;
      entry->file.inode = header->inode;
      entry->file.offset =
          static_cast<uint64_t>(entry->begin - reinterpret_cast<const char*>(header));
    } else {
      LOOM_WARN(
          "registering {}: cannot map its allocation's header ({}); peers will not read it "
          "in place",
          buff, std::strerror(errno));
    }
  }
  void* handle = entry.get();
  entries_.push_back(std::move(entry));
  return handle;
}

void BufferRegistry::remove(void* handle) {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const auto& e) { return e.get() == handle; });
  if (it == entries_.end()) {
    raise(ErrorCode::InvalidArgument,
          "handle {} is not a registration of this communicator (or was deregistered)", handle);
  }
  if ((*it)->header != nullptr) {
    munmap(const_cast<SharedBufferHeader*>((*it)->header), sharedBufferPage());
  }
  entries_.erase(it);
}

SharedFileRef BufferRegistry::find(const void* ptr, size_t bytes) {
  const auto* at = static_cast<const char*>(ptr);
  for (const auto& e : entries_) {
    if (!e->file.valid() || at < e->begin || at > e->begin + e->bytes ||
        bytes > static_cast<size_t>(e->begin + e->bytes - at)) {
      continue;
    }
    if (e->header->freed.load(std::memory_order_acquire) != 0) {
      // Freed without being deregistered: its file need not live on for this.
      munmap(const_cast<SharedBufferHeader*>(e->header), sharedBufferPage());
      e->header = nullptr;
      e->file = {};
      continue;
    }
    SharedFileRef ref = e->file;
    ref.offset += static_cast<uint64_t>(at - e->begin);
    return ref;
  }
  return {};
}

}  // namespace loom
