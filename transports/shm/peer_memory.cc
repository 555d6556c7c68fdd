#include "transports/shm/peer_memory.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

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
    } else if (allowCrossMemory) {
      access_[r] = PeerAccess::CrossMemory;
      pidfds_[r] = openPidFd(pids_[r]);
    }
  }
}

PeerMemory::~PeerMemory() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
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
  if (access_[p] != PeerAccess::CrossMemory || pidfds_[p] < 0) return;
  // A pidfd turns readable when its process exits.
  pollfd fd{pidfds_[p], POLLIN, 0};
  if (poll(&fd, 1, 0) > 0) {
    raise(ErrorCode::RemoteError,
          "rank {}: rank {} (pid {}) exited while this rank read its buffer directly", rank_, peer,
          pids_[p]);
  }
}

}  // namespace loom
