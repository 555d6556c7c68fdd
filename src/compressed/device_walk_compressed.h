// Compressed collectives on the plan-walking kernel's path (int8, two-shot):
// the host algorithm of compressed_two_shot.cc and compressed_common.cc with
// every step on the device, in stream order and without host
// synchronisation: encode kernels, a byte all-to-all walk, decode-accumulate
// kernels in rank order, the owner's encode, an all-gather walk, decode
// kernels. The layout, counters and element math are the host's, so results
// are the host path's bits. Internal to the device paths (src/device_paths/device_walk.cc).
#pragma once

#include <cstddef>
#include <string>

#include "comm/operation.h"
#include "device_paths/device_walk.h"

namespace loom {

/// Whether the kernel path runs compressed `op` itself: int8 and top-k by
/// two-shot or (top-k all-reduce on few ranks) sparse all-gather, and
/// all-gather, with or without error feedback (the residual then also lives
/// in device memory, device_feedback.h). The compressed ring takes the
/// staged path. The same answer on every rank.
bool walksCompressed(const Comm& comm, const Operation& op);

/// Device scratch `op` needs at most (0 for an uncompressed call): as if it
/// kept error feedback, which only some ranks might, so that every rank
/// answers alike from the call's shared arguments.
size_t compressedScratchBytes(const Comm& comm, const Operation& op);

/// Grows `state`'s codec scratch to `bytes` when it is smaller. Every rank
/// calls it with the same `bytes` (compressedScratchBytes), at the same call,
/// before any launch of that call: allocating while a peer's walk waits for
/// this rank's would keep them from overlapping (see createState).
void growCodecScratch(Comm& comm, DeviceWalkState& state, size_t bytes);

/// Enqueues compressed `op` on `stream`: kernels and walks, nothing waited for.
void walkCompressed(Comm& comm, DeviceWalkState& state, const Operation& op, void* stream);

/// What the last compressed call's decodes found wrong with what peers sent,
/// once that call has finished (empty otherwise, and after it was said).
std::string compressedCallFailure(DeviceWalkState& state);

}  // namespace loom
