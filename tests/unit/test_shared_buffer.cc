// loomMemAlloc's shared buffers (transports/shm/shared_buffer.h), the
// communicator's registry of them (src/comm/buffer_registry.h), and a peer's
// mapping of one (PeerMemory::mapShared), here through this process's own
// /proc entry; the multirank suites map them across processes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/buffer_registry.h"
#include "core/error.h"
#include "transports/shm/peer_memory.h"
#include "transports/shm/shared_buffer.h"

namespace loom {
namespace {

ErrorCode codeOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::InternalError;  // no error at all is never what these expect
}

TEST(SharedBuffer, AllocatesZeroedPageAlignedMemoryOfAnySize) {
  const size_t page = sharedBufferPage();
  for (size_t bytes : {size_t{0}, size_t{1}, page - 1, page + 1, size_t{3} << 20}) {
    auto* p = static_cast<unsigned char*>(allocateSharedBuffer(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u) << bytes;
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], 0) << bytes << " at " << i;
    std::memset(p, 0x7E, bytes);
    const SharedBufferHeader* header = findSharedBuffer(p, bytes);
    ASSERT_NE(header, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<const char*>(header) + page, reinterpret_cast<char*>(p));
    EXPECT_EQ(header->pid, getpid());
    // The allocation ends at a page boundary: past it is not inside.
    const size_t capacity = header->fileBytes - page;
    EXPECT_NE(findSharedBuffer(p + 1, capacity - 1), nullptr);
    EXPECT_EQ(findSharedBuffer(p + 1, capacity), nullptr);
    freeSharedBuffer(p);
  }
}

TEST(SharedBuffer, OtherMemoryIsNotFoundAndCannotBeFreed) {
  std::vector<char> heap(100000);
  int onStack = 0;
  EXPECT_EQ(findSharedBuffer(heap.data(), 10), nullptr);
  EXPECT_EQ(findSharedBuffer(&onStack, sizeof onStack), nullptr);
  EXPECT_EQ(codeOf([&] { freeSharedBuffer(heap.data()); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(codeOf([&] { freeSharedBuffer(&onStack); }), ErrorCode::InvalidArgument);
  auto* p = static_cast<char*>(allocateSharedBuffer(5000));
  // Not the pointer loomMemAlloc gave: refused, and the buffer stays usable.
  EXPECT_EQ(codeOf([&] { freeSharedBuffer(p + 64); }), ErrorCode::InvalidArgument);
  p[4999] = 'x';
  EXPECT_EQ(p[4999], 'x');
  freeSharedBuffer(p);
  EXPECT_EQ(codeOf([&] { freeSharedBuffer(p); }), ErrorCode::InvalidArgument);  // twice
}

TEST(BufferRegistry, FindsRangesInsideRegisteredSharedBuffersOnly) {
  const size_t page = sharedBufferPage();
  auto* p = static_cast<char*>(allocateSharedBuffer(10000));
  std::vector<char> heap(10000);
  {
    BufferRegistry registry;
    EXPECT_TRUE(registry.empty());
    void* handle = registry.add(p + 100, 1000);
    registry.add(heap.data(), heap.size());  // registers; nothing to share
    const SharedBufferHeader* header = findSharedBuffer(p, 1);
    SharedFileRef ref = registry.find(p + 100, 1000);
    ASSERT_TRUE(ref.valid());
    EXPECT_EQ(ref.fd, header->fd);
    EXPECT_EQ(ref.inode, header->inode);
    EXPECT_EQ(ref.offset, page + 100);
    EXPECT_EQ(registry.find(p + 200, 10).offset, page + 200);
    EXPECT_TRUE(registry.find(p + 1100, 0).valid());     // the empty range at the end
    EXPECT_FALSE(registry.find(p + 50, 10).valid());     // starts before the registration
    EXPECT_FALSE(registry.find(p + 100, 1001).valid());  // ends after it
    EXPECT_FALSE(registry.find(heap.data(), 10).valid());
    int other = 0;
    EXPECT_EQ(codeOf([&] { registry.remove(&other); }), ErrorCode::InvalidArgument);
    registry.remove(handle);
    EXPECT_FALSE(registry.find(p + 100, 1000).valid());
    EXPECT_EQ(codeOf([&] { registry.remove(handle); }), ErrorCode::InvalidArgument);
  }
  freeSharedBuffer(p);
}

TEST(BufferRegistry, AFreedBufferIsNoLongerOffered) {
  auto* p = static_cast<char*>(allocateSharedBuffer(4096));
  BufferRegistry registry;
  void* handle = registry.add(p, 4096);
  ASSERT_TRUE(registry.find(p, 4096).valid());
  freeSharedBuffer(p);  // without deregistering first
  EXPECT_FALSE(registry.find(p, 4096).valid());
  registry.remove(handle);
}

TEST(PeerMemory, MapsAPeersSharedBufferAndChecksWhatItMaps) {
  const std::vector<int> pids = {getpid(), getpid()};
  const PeerMemory memory(0, pids, false);
  auto* p = static_cast<char*>(allocateSharedBuffer(20000));
  for (int i = 0; i < 20000; ++i) p[i] = static_cast<char>(i * 7);
  BufferRegistry registry;
  registry.add(p, 20000);
  const SharedFileRef ref = registry.find(p + 3, 19997);
  std::string why;
  EXPECT_TRUE(memory.canMap(1, ref, &why)) << why;
  const char* mapped = memory.mapShared(1, ref, 19997);
  EXPECT_NE(mapped, p + 3);  // a mapping of its own
  EXPECT_EQ(std::memcmp(mapped, p + 3, 19997), 0);
  p[10] = 42;  // the same pages
  EXPECT_EQ(mapped[7], 42);
  EXPECT_EQ(memory.mapShared(1, ref, 100), mapped);  // kept across calls

  SharedFileRef wrongInode = ref;
  ++wrongInode.inode;
  EXPECT_EQ(codeOf([&] { memory.mapShared(1, wrongInode, 1); }), ErrorCode::RemoteError);
  EXPECT_FALSE(memory.canMap(1, wrongInode, &why));
  EXPECT_NE(why, "");
  EXPECT_EQ(codeOf([&] { memory.mapShared(1, ref, size_t{1} << 30); }), ErrorCode::RemoteError);

  const char before = mapped[19996];
  freeSharedBuffer(p);
  // The owner freed it: what mapShared gave stays readable until the next
  // round lets freed mappings go; after that a new map finds no file.
  EXPECT_EQ(mapped[19996], before);
  EXPECT_EQ(memory.mapShared(1, ref, 1), mapped);
  memory.dropFreedMappings();
  EXPECT_EQ(codeOf([&] { memory.mapShared(1, ref, 1); }), ErrorCode::RemoteError);
}

TEST(PeerMemory, OutOfDescriptorsIsThisProcessesTroubleNotThePeers) {
  const std::vector<int> pids = {getpid(), getpid()};
  const PeerMemory memory(0, pids, false);
  auto* p = static_cast<char*>(allocateSharedBuffer(4096));
  BufferRegistry registry;
  registry.add(p, 4096);
  const SharedFileRef ref = registry.find(p, 4096);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = std::min<rlim_t>(before.rlim_cur, 256);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> held;
  for (int fd = open("/dev/null", O_RDONLY); fd >= 0; fd = open("/dev/null", O_RDONLY)) {
    held.push_back(fd);
  }
  const ErrorCode code = codeOf([&] { memory.mapShared(1, ref, 1); });
  for (int fd : held) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  EXPECT_EQ(code, ErrorCode::SystemError);          // EMFILE: not a RemoteError blaming rank 1
  EXPECT_NE(memory.mapShared(1, ref, 1), nullptr);  // and it maps once descriptors are back
  freeSharedBuffer(p);
}

}  // namespace
}  // namespace loom
