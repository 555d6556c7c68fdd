#include "transports/shm/peer_memory.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace loom {
namespace {

/// A descriptor that names `pid`'s process and no later holder of the number,
/// or -1 where the kernel has no pidfd_open (before Linux 5.3).
int openPidFd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace

PeerMemory::PeerMemory(int rank, std::span<const int> pids, bool allowCrossMemory)
    : rank_(rank),
      pids_(pids.begin(), pids.end()),
      access_(pids.size(), PeerAccess::None),
      pidfds_(pids.size(), -1) {
  const int mine = pids_[static_cast<size_t>(rank)];
  for (size_t r = 0; r < pids_.size(); ++r) {
    if (pids_[r] == mine) {
      access_[r] = PeerAccess::Pointer;
      continue;
    }
    if (allowCrossMemory) access_[r] = PeerAccess::CrossMemory;
    // Mapped shared buffers are read from other processes whatever the access.
    pidfds_[r] = openPidFd(pids_[r]);
  }
}

PeerMemory::~PeerMemory() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
  for (const Mapping& m : mappings_) munmap(const_cast<SharedBufferHeader*>(m.header), m.bytes);
}

PeerMemory::Mapping PeerMemory::mapFile(int peer, const SharedFileRef& ref) const {
  const int pid = pids_[static_cast<size_t>(peer)];
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, ref.fd);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    // Out of descriptors or memory is this process's trouble, not the peer's.
    const bool local = error == EMFILE || error == ENFILE || error == ENOMEM;
    raise(local ? ErrorCode::SystemError : ErrorCode::RemoteError,
          "rank {}: cannot open rank {}'s shared buffer ({}): {}", rank_, peer, path,
          std::strerror(error));
  }
  struct stat st {};
  void* base = MAP_FAILED;
  int mapError = 0;
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_ino) == ref.inode &&
      static_cast<size_t>(st.st_size) >= sharedBufferPage()) {
    base = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) mapError = errno;
  }
  close(fd);
  if (mapError != 0) {
    raise(ErrorCode::SystemError, "rank {}: cannot map rank {}'s shared buffer of {} bytes: {}",
          rank_, peer, st.st_size, std::strerror(mapError));
  }
  const auto* header = static_cast<const SharedBufferHeader*>(base);
  if (base == MAP_FAILED || header->magic != kSharedBufferMagic || header->inode != ref.inode) {
    if (base != MAP_FAILED) munmap(base, static_cast<size_t>(st.st_size));
    raise(ErrorCode::RemoteError,
          "rank {}: rank {}'s shared buffer ({}) is not the one it published (freed?)", rank_, peer,
          path);
  }
  return {peer, ref.inode, header, static_cast<size_t>(st.st_size)};
}

bool PeerMemory::canMap(int peer, const SharedFileRef& ref, std::string* why) const {
  try {
    const Mapping m = mapFile(peer, ref);
    munmap(const_cast<SharedBufferHeader*>(m.header), m.bytes);
    return true;
  } catch (const Error& e) {
    if (why != nullptr && why->empty()) *why = e.what();
    return false;
  }
}

void PeerMemory::dropFreedMappings() const {
  std::erase_if(mappings_, [](const Mapping& m) {
    if (m.header->freed.load(std::memory_order_acquire) == 0) return false;
    munmap(const_cast<SharedBufferHeader*>(m.header), m.bytes);
    return true;
  });
}

const char* PeerMemory::mapShared(int peer, const SharedFileRef& ref, size_t bytes) const {
  auto it = std::find_if(mappings_.begin(), mappings_.end(),
                         [&](const Mapping& m) { return m.peer == peer && m.inode == ref.inode; });
  if (it == mappings_.end()) {
    mappings_.push_back(mapFile(peer, ref));
    it = mappings_.end() - 1;
  }
  if (ref.offset > it->bytes || bytes > it->bytes - ref.offset) {
    raise(ErrorCode::RemoteError,
          "rank {}: rank {} published {} bytes at offset {} of a {}-byte shared buffer", rank_,
          peer, bytes, ref.offset, it->bytes);
  }
  return reinterpret_cast<const char*>(it->header) + ref.offset;
}

void PeerMemory::probe(std::span<const uint64_t> addresses, uint64_t expected, std::string* why) {
  for (size_t r = 0; r < access_.size(); ++r) {
    if (access_[r] != PeerAccess::CrossMemory) continue;
    uint64_t value = 0;
    iovec local{&value, sizeof value};
    iovec remote{reinterpret_cast<void*>(addresses[r]), sizeof value};
    const ssize_t got = process_vm_readv(pids_[r], &local, 1, &remote, 1, 0);
    if (got == static_cast<ssize_t>(sizeof value) && value == expected) continue;
    const int error = errno;
    if (why != nullptr && why->empty()) {
      *why = got < 0 ? fmt::format("process_vm_readv of rank {} (pid {}): {}", r, pids_[r],
                                   std::strerror(error))
                     : fmt::format("process_vm_readv of rank {} (pid {}) read another value", r,
                                   pids_[r]);
    }
    access_[r] = PeerAccess::None;
  }
}

bool PeerMemory::everyPeerReadable() const {
  for (PeerAccess a : access_) {
    if (a == PeerAccess::None) return false;
  }
  return true;
}

void PeerMemory::read(int peer, uint64_t address, void* local, size_t bytes) const {
  const size_t p = static_cast<size_t>(peer);
  if (bytes == 0) return;
  if (access_[p] == PeerAccess::Pointer) {
    std::memcpy(local, reinterpret_cast<const void*>(address), bytes);
    return;
  }
  if (access_[p] != PeerAccess::CrossMemory) {
    raise(ErrorCode::InternalError, "rank {} cannot read rank {}'s memory", rank_, peer);
  }
  auto* to = static_cast<char*>(local);
  size_t done = 0;
  while (done < bytes) {
    // The kernel may stop short (at a page it could not pin): go on from there.
    iovec here{to + done, bytes - done};
    iovec there{reinterpret_cast<void*>(address + done), bytes - done};
    const ssize_t got = process_vm_readv(pids_[p], &here, 1, &there, 1, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    const int error = got < 0 ? errno : EFAULT;
    if (error == EINTR) continue;
    raise(ErrorCode::RemoteError,
          "rank {}: reading {} bytes of rank {}'s buffer (pid {}, address {:#x}) failed: {}{}",
          rank_, bytes - done, peer, pids_[p], address + done, std::strerror(error),
          error == ESRCH ? " (the process exited)" : "");
  }
}

const char* PeerMemory::view(int peer, uint64_t address, size_t bytes, char* scratch) const {
  if (access_[static_cast<size_t>(peer)] == PeerAccess::Pointer) {
    return reinterpret_cast<const char*>(address);
  }
  read(peer, address, scratch, bytes);
  return scratch;
}

void PeerMemory::checkAlive(int peer) const {
  const size_t p = static_cast<size_t>(peer);
  if (pidfds_[p] < 0) return;
  // A pidfd turns readable when its process exits.
  pollfd fd{pidfds_[p], POLLIN, 0};
  if (poll(&fd, 1, 0) > 0) {
    raise(ErrorCode::RemoteError,
          "rank {}: rank {} (pid {}) exited while this rank read its buffer directly", rank_, peer,
          pids_[p]);
  }
}

}  // namespace loom
