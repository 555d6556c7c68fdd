// Memory of the emulated CUDA runtime (emulated_runtime.cc). "Device" memory is
// host memory in a memfd, so that another process can map it through an
// emulated IPC handle (/proc/<pid>/fd/<fd>), as CUDA IPC maps a peer's
// allocation; pinned host memory is plain host memory. Every allocation is
// registered, so cudaPointerGetAttributes can tell the kinds apart.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::emulated {

enum class Kind : int { Unregistered = 0, PinnedHost = 1, Device = 2 };

struct Lookup {
  Kind kind = Kind::Unregistered;
  int device = -1;
  char* base = nullptr;
};

/// A device allocation of `bytes` on `device`; nullptr when out of memory.
void* allocateDevice(size_t bytes, int device);
void* allocatePinned(size_t bytes, int device);
/// Frees what allocate* made, or unmaps what openShared mapped; false when
/// `ptr` is none of those.
bool release(void* ptr);
Lookup lookup(const void* ptr);

/// What crosses processes for cudaIpcGetMemHandle (64 bytes at most).
struct SharedHandle {
  uint64_t magic;
  int64_t pid;
  int64_t fd;
  uint64_t bytes;
  int64_t device;
};
/// The handle of the device allocation that starts at `ptr`.
bool shareDevice(const void* ptr, SharedHandle* handle);
/// Maps a peer's allocation; nullptr when the handle is bad or the mapping fails.
void* openShared(const SharedHandle& handle);

}  // namespace loom::emulated
