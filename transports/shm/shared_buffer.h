// Host buffers that the other processes of a communicator can map and read in
// place (loomMemAlloc). Each allocation is a memfd, mapped whole: its first
// page holds a header, the user's bytes follow. A peer that holds the owner's
// process id, the descriptor number and the file's inode maps the same pages
// through /proc/<pid>/fd/<n> and checks the inode, so a number reused for
// another file is never mistaken for the buffer. The owner marks the header
// when it frees the allocation; peers drop their mappings when they see it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace loom {

inline constexpr uint64_t kSharedBufferMagic = 0x4c4f4f4d42554631ULL;  // "LOOMBUF1"

struct SharedBufferHeader {
  uint64_t magic;
  int32_t fd;  ///< in the owner's process
  int32_t pid;
  uint64_t inode;
  uint64_t fileBytes;  ///< header page included
  std::atomic<uint32_t> freed;
};

/// Which shared file holds a buffer, in terms another process can act on.
struct SharedFileRef {
  int32_t fd = -1;  ///< -1: not in a shared allocation
  uint64_t inode = 0;
  uint64_t offset = 0;  ///< of the buffer's first byte in the file
  bool valid() const { return fd >= 0; }
};

/// Page size, the header's share of every allocation.
size_t sharedBufferPage();

/// `bytes` (0 allowed) of zeroed shared memory, page-aligned. SystemError if
/// the kernel refuses.
void* allocateSharedBuffer(size_t bytes);

/// Frees what allocateSharedBuffer gave; InvalidArgument for any other pointer
/// (checked without touching memory that is not mapped).
void freeSharedBuffer(void* ptr);

/// The header of the allocation that holds [ptr, ptr + bytes), found through
/// /proc/self/maps (a few hundred microseconds: for registration, not calls);
/// nullptr if that range is not inside one allocation.
const SharedBufferHeader* findSharedBuffer(const void* ptr, size_t bytes);

}  // namespace loom
