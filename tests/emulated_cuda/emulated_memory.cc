#include "emulated_cuda/emulated_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace loom::emulated {
namespace {

constexpr uint64_t kMagic = 0x6c6f6f6d656d7531ull;  // "loomemu1"

struct Allocation {
  size_t bytes = 0;
  Kind kind = Kind::Unregistered;
  int device = -1;
  int fd = -1;          // device memory: its memfd (-1 for pinned host memory)
  bool mapped = false;  // opened from a peer's handle
};

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byBase;
};

Registry& registry() {
  static Registry r;  // the emulated device's own state: one per process, like a context
  return r;
}

size_t pageRounded(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return std::max(page, (bytes + page - 1) / page * page);
}

void add(void* ptr, const Allocation& a) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.byBase[reinterpret_cast<uintptr_t>(ptr)] = a;
}

}  // namespace

void* allocateDevice(size_t bytes, int device) {
  const size_t size = pageRounded(bytes);
  const int fd = memfd_create("loom-emulated-device", 0);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return nullptr;
  }
  void* ptr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ptr == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  add(ptr, Allocation{size, Kind::Device, device, fd, false});
  return ptr;
}

void* allocatePinned(size_t bytes, int device) {
  void* ptr = std::aligned_alloc(256, pageRounded(bytes));
  if (ptr != nullptr) add(ptr, Allocation{bytes, Kind::PinnedHost, device, -1, false});
  return ptr;
}

bool release(void* ptr) {
  Allocation a;
  {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.byBase.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.byBase.end()) return false;
    a = it->second;
    r.byBase.erase(it);
  }
  if (a.kind == Kind::PinnedHost) {
    std::free(ptr);
    return true;
  }
  munmap(ptr, a.bytes);
  if (a.fd >= 0) close(a.fd);
  return true;
}

Lookup lookup(const void* ptr) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto it = r.byBase.upper_bound(address);
  if (it == r.byBase.begin()) return {};
  --it;
  if (address >= it->first + std::max<size_t>(it->second.bytes, 1)) return {};
  return Lookup{it->second.kind, it->second.device,
                reinterpret_cast<char*>(it->first)};  // NOLINT(performance-no-int-to-ptr)
}

bool shareDevice(const void* ptr, SharedHandle* handle) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.byBase.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == r.byBase.end() || it->second.kind != Kind::Device || it->second.fd < 0) return false;
  *handle = SharedHandle{kMagic, getpid(), it->second.fd, it->second.bytes, it->second.device};
  return true;
}

void* openShared(const SharedHandle& handle) {
  if (handle.magic != kMagic || handle.bytes == 0) return nullptr;
  const std::string path =
      "/proc/" + std::to_string(handle.pid) + "/fd/" + std::to_string(handle.fd);
  const int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return nullptr;
  void* ptr = mmap(nullptr, handle.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (ptr == MAP_FAILED) return nullptr;
  add(ptr, Allocation{handle.bytes, Kind::Device, static_cast<int>(handle.device), -1, true});
  return ptr;
}

}  // namespace loom::emulated
