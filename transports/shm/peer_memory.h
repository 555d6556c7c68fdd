// Reading other local ranks' user buffers in place, for the single-copy direct
// algorithm (collectives/executor/direct_single_copy.cc). Ranks that are
// threads of one process read each other's buffers through plain pointers;
// ranks in other processes through cross-memory attach (process_vm_readv),
// where the kernel permits it (ptrace rules, container seccomp profiles).
// Whether it is permitted is found once, when the communicator is made, by
// reading a known word of each peer; every read afterwards is one system call
// straight from the peer's buffer into this rank's memory. Buffers that the
// peer allocated with loomMemAlloc (shared_buffer.h) are mapped here instead
// and read like a thread's, whatever cross-memory attach allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "transports/shm/shared_buffer.h"

namespace loom {

enum class PeerAccess : uint8_t {
  None,         ///< cannot read: this rank uses the shared arena
  Pointer,      ///< same process (or self): the address is usable as is
  CrossMemory,  ///< another process: process_vm_readv
};

class PeerMemory {
 public:
  /// `pids[r]`: rank r's process id, for every rank of the communicator (all
  /// on this host); `allowCrossMemory`: false keeps other processes at None.
  PeerMemory(int rank, std::span<const int> pids, bool allowCrossMemory);
  ~PeerMemory();
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;

  /// Tries one 8-byte read of every other-process peer at `addresses[r]`,
  /// which must hold `expected` there; a peer whose read fails or differs
  /// becomes None, and `why` (if given) says which and why.
  void probe(std::span<const uint64_t> addresses, uint64_t expected, std::string* why);

  PeerAccess access(int peer) const { return access_[static_cast<size_t>(peer)]; }
  /// Whether every peer can be read.
  bool everyPeerReadable() const;

  /// Copies `bytes` at `address` in `peer`'s memory to `local`. A peer that
  /// exited, or whose memory is gone, is a RemoteError naming it.
  void read(int peer, uint64_t address, void* local, size_t bytes) const;
  /// `bytes` of `peer`'s memory at `address`, readable here: the address
  /// itself for a Pointer peer, else copied into `scratch` (>= bytes).
  const char* view(int peer, uint64_t address, size_t bytes, char* scratch) const;
  /// Whether ranks a and b are threads of one process.
  bool sameProcess(int a, int b) const {
    return pids_[static_cast<size_t>(a)] == pids_[static_cast<size_t>(b)];
  }
  /// Whether every rank is a thread of rank r's process.
  bool everyRankInProcessOf(int r) const {
    for (size_t q = 0; q < pids_.size(); ++q) {
      if (!sameProcess(static_cast<int>(q), r)) return false;
    }
    return true;
  }

  /// Whether `peer`'s shared buffer `ref` can be mapped here: for the probe
  /// at creation; `why` (if given) says why not.
  bool canMap(int peer, const SharedFileRef& ref, std::string* why) const;
  /// The first of `bytes` bytes of `peer`'s shared buffer `ref`, mapped
  /// read-only here (kept across calls). RemoteError if it cannot be mapped
  /// (the peer's file is gone or not the one published) or is too short;
  /// SystemError where this process is out of descriptors or memory.
  const char* mapShared(int peer, const SharedFileRef& ref, size_t bytes) const;
  /// Lets go of the mappings of buffers their owners freed. Never while an
  /// address from mapShared is still in use: once per round, before mapping.
  void dropFreedMappings() const;

  /// Throws RemoteError if `peer`'s process has exited since the
  /// communicator was made (its process id may name another process by now,
  /// so what was read from it must not be used). Never throws for a Pointer
  /// peer. Costs a system call for a peer in another process.
  void checkAlive(int peer) const;

 private:
  int rank_;
  std::vector<int> pids_;
  std::vector<PeerAccess> access_;
  std::vector<int> pidfds_;  // -1 where none (no pidfd_open on old kernels, or not needed)
  struct Mapping {
    int peer;
    uint64_t inode;
    const SharedBufferHeader* header;  // the mapping's start
    size_t bytes;
  };
  /// Peers' shared buffers mapped so far: a cache, filled while reading.
  mutable std::vector<Mapping> mappings_;
  Mapping mapFile(int peer, const SharedFileRef& ref) const;
};

}  // namespace loom
