// The CUDA P2P transport: write access from one rank's device to its peers'
// FIFO arenas in device memory, by pointer between ranks of one process, by
// CUDA IPC handle between processes, with peer access between GPUs. The FIFO
// layout and the protocol over it belong to the plan walker
// (collectives/walker/walk_program.h); pairs this cannot connect talk through
// the walker's proxy over pinned host memory (collectives/walker/walk_proxy.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "device/cuda_runtime.h"

namespace loom::cuda_p2p {

/// One rank's arena as its peers need it; travels to every rank as bytes.
struct ArenaRecord {
  char* pointer = nullptr;  ///< for ranks of the same process
  device::CudaIpcMemHandle handle{};
  int64_t shareable = 0;  ///< whether the handle was made (8 bytes: no padding to send)
};

/// The record of `arena` (device memory from cudaMalloc) of rank `rank`:
/// its pointer, and its IPC handle when CUDA gives one (the log says why not).
ArenaRecord recordOf(void* arena, int rank);

/// Where a peer lives, as this rank sees it.
struct PeerPlace {
  int device = -1;
  bool sameHost = false;
  bool sameProcess = false;
};

/// Whether device `mine` can write into memory on device `other` (of this
/// process), enabling peer access when it is another device.
bool deviceReaches(int mine, int other);

/// The peers' arenas this rank writes into, mapped while this lives.
class PeerArenas {
 public:
  PeerArenas() = default;
  ~PeerArenas();
  PeerArenas(const PeerArenas&) = delete;
  PeerArenas& operator=(const PeerArenas&) = delete;

  /// Rank `rank` on `device`, owning `ownArena`: maps the arena of every peer
  /// of this host it can write to (`places` and `records` are every rank's).
  /// A peer whose device is out of reach or whose mapping CUDA refuses is
  /// left unmapped, and the log says why. Returns the mask of ranks reached
  /// (this one included).
  uint64_t map(int rank, int device, void* ownArena, std::span<const PeerPlace> places,
               std::span<const ArenaRecord> records);
  /// Only this rank's own arena: every peer left to the proxy.
  uint64_t mapNone(int rank, size_t nranks, void* ownArena);

  /// Every rank's arena as this rank addresses it; null where not reached.
  const std::vector<char*>& pointers() const { return pointers_; }
  /// Stops addressing `peer` directly (its mapping stays open until the end).
  void forget(int peer) { pointers_[static_cast<size_t>(peer)] = nullptr; }

 private:
  std::vector<char*> pointers_;
  std::vector<void*> mappings_;  ///< opened from IPC handles; closed at destruction
};

}  // namespace loom::cuda_p2p
