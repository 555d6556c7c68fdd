// Buffers registered with a communicator (loomCommRegister). Those inside
// loomMemAlloc allocations can be mapped by the ranks in other processes, so a
// single-copy round tells them where to map instead of copying through the
// shared arena (collectives/executor/direct_single_copy.cc). Buffers from
// anywhere else register too, as NCCL's do, and change nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "transports/shm/shared_buffer.h"

namespace loom {

class BufferRegistry {
 public:
  BufferRegistry() = default;
  ~BufferRegistry();
  BufferRegistry(const BufferRegistry&) = delete;
  BufferRegistry& operator=(const BufferRegistry&) = delete;

  /// Registers [buff, buff + bytes); the handle to deregister it with.
  void* add(const void* buff, size_t bytes);
  /// InvalidArgument for a handle this registry did not give (or already took back).
  void remove(void* handle);
  /// Where [ptr, ptr + bytes) lies in a registered loomMemAlloc allocation
  /// that is not freed; invalid where it does not. Lets go of what it holds
  /// of allocations it finds freed.
  SharedFileRef find(const void* ptr, size_t bytes);
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    const char* begin = nullptr;
    size_t bytes = 0;
    SharedFileRef file;  ///< of `begin`; invalid outside loomMemAlloc allocations
    /// Its own mapping of the allocation's header: it outlives the owner's
    /// loomMemFree, which marks it freed.
    const SharedBufferHeader* header = nullptr;
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace loom
