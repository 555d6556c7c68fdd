#include "transports/shm/shared_buffer.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"

namespace loom {
namespace {

constexpr const char* kFileName = "loom-buffer";

}  // namespace

size_t sharedBufferPage() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

void* allocateSharedBuffer(size_t bytes) {
  const size_t page = sharedBufferPage();
  // At least one byte past the header, so that the user's pointer lies inside
  // the mapping even for a zero-byte request.
  const size_t userBytes = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
  if (userBytes < bytes || userBytes > SIZE_MAX - page) {
    raise(ErrorCode::InvalidArgument, "cannot allocate {} bytes", bytes);
  }
  const size_t fileBytes = page + userBytes;
  const int fd = memfd_create(kFileName, MFD_CLOEXEC);
  if (fd < 0) raiseErrno("memfd_create for a shared buffer");
  struct stat st {};
  if (ftruncate(fd, static_cast<off_t>(fileBytes)) != 0 || fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    raiseErrno(fmt::format("sizing a shared buffer of {} bytes", bytes));
  }
  void* base = mmap(nullptr, fileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    errno = error;
    raiseErrno(fmt::format("mapping a shared buffer of {} bytes", bytes));
  }
  auto* header = new (base) SharedBufferHeader{};
  header->magic = kSharedBufferMagic;
  header->fd = fd;
  header->pid = static_cast<int32_t>(getpid());
  header->inode = static_cast<uint64_t>(st.st_ino);
  header->fileBytes = fileBytes;
  return static_cast<char*>(base) + page;
}

const SharedBufferHeader* findSharedBuffer(const void* ptr, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(ptr);
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return nullptr;
  const SharedBufferHeader* found = nullptr;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long start = 0;
    unsigned long end = 0;
    unsigned long long offset = 0;
    unsigned long long inode = 0;
    int pathAt = 0;
    if (std::sscanf(line, "%lx-%lx %*s %llx %*s %llu %n", &start, &end, &offset, &inode, &pathAt) <
        4) {
      continue;
    }
    if (at < start || at >= end) continue;
    // Mapped whole from offset 0 by allocateSharedBuffer, so the mapping
    // starts at the header.
    const std::string path(line + pathAt);
    if (offset == 0 && path.find(std::string("/memfd:") + kFileName) == 0 && bytes <= end - at) {
      const auto* header = reinterpret_cast<const SharedBufferHeader*>(start);
      if (header->magic == kSharedBufferMagic && header->inode == inode &&
          header->fileBytes == end - start && at >= start + sharedBufferPage()) {
        found = header;
      }
    }
    break;
  }
  std::fclose(maps);
  return found;
}

void freeSharedBuffer(void* ptr) {
  const auto* found = findSharedBuffer(ptr, 0);
  if (found == nullptr ||
      reinterpret_cast<const char*>(found) + sharedBufferPage() != static_cast<char*>(ptr)) {
    raise(ErrorCode::InvalidArgument, "{} was not allocated by loomMemAlloc (or is freed)", ptr);
  }
  auto* header = const_cast<SharedBufferHeader*>(found);
  // Peers that mapped the buffer see this and let their mappings go.
  header->freed.store(1, std::memory_order_release);
  const int fd = header->fd;
  munmap(header, header->fileBytes);
  close(fd);
}

}  // namespace loom
