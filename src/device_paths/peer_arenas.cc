#include "device_paths/peer_arenas.h"

#include "core/log.h"

namespace loom::cuda_p2p {

ArenaRecord recordOf(void* arena, int rank) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  ArenaRecord record;
  record.pointer = static_cast<char*>(arena);
  const device::CudaStatus status = rt.ipcGetMemHandle(&record.handle, arena);
  record.shareable = status == 0 ? 1 : 0;
  if (status != 0) {
    rt.getLastError();
    LOOM_INFO("rank {}: cudaIpcGetMemHandle of its FIFOs failed ({})", rank,
              rt.getErrorString(status));
  }
  return record;
}

bool deviceReaches(int mine, int other) {
  if (other == mine) return true;
  const device::DeviceRuntime& rt = device::deviceRuntime();
  int can = 0;
  if (rt.deviceCanAccessPeer(&can, mine, other) != 0 || can == 0) {
    rt.getLastError();
    return false;
  }
  const device::CudaStatus status = rt.deviceEnablePeerAccess(other, 0);
  if (status != 0) {
    rt.getLastError();  // clear the sticky error of "already enabled"
    if (status != device::kPeerAccessAlreadyEnabled) return false;
  }
  return true;
}

uint64_t PeerArenas::mapNone(int rank, size_t nranks, void* ownArena) {
  pointers_.assign(nranks, nullptr);
  pointers_[static_cast<size_t>(rank)] = static_cast<char*>(ownArena);
  return uint64_t{1} << rank;
}

uint64_t PeerArenas::map(int rank, int device, void* ownArena, std::span<const PeerPlace> places,
                         std::span<const ArenaRecord> records) {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  uint64_t reaches = mapNone(rank, places.size(), ownArena);
  for (size_t p = 0; p < places.size(); ++p) {
    const PeerPlace& peer = places[p];
    if (static_cast<int>(p) == rank || !peer.sameHost) continue;
    if (!deviceReaches(device, peer.device)) {
      LOOM_INFO("rank {}: device {} has no peer access to rank {}'s device {}", rank, device, p,
                peer.device);
      continue;
    }
    if (peer.sameProcess) {
      pointers_[p] = records[p].pointer;
    } else {
      if (records[p].shareable == 0) continue;
      void* mapped = nullptr;
      const device::CudaStatus status =
          rt.ipcOpenMemHandle(&mapped, records[p].handle, device::kIpcLazyEnablePeerAccess);
      if (status != 0) {
        rt.getLastError();
        LOOM_INFO("rank {}: cudaIpcOpenMemHandle of rank {}'s FIFOs failed ({})", rank, p,
                  rt.getErrorString(status));
        continue;
      }
      mappings_.push_back(mapped);
      pointers_[p] = static_cast<char*>(mapped);
    }
    reaches |= uint64_t{1} << p;
  }
  return reaches;
}

PeerArenas::~PeerArenas() {
  const device::DeviceRuntime& rt = device::deviceRuntime();
  for (void* mapped : mappings_) rt.ipcCloseMemHandle(mapped);
}

}  // namespace loom::cuda_p2p
