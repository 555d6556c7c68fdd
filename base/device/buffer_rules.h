// Which buffers one collective call may mix, and what runs them.
#pragma once

#include <string_view>

#include "device/driver_watch.h"
#include "device/memory_kind.h"

namespace loom::device {

/// Whether this machine can run collectives on device buffers: a CUDA runtime
/// with a device is loaded. They run staged through host memory
/// (src/device_paths/device_staging.cc) until the kernel executor exists (docs/cuda.md).
bool haveDevicePath();

/// The rule for one call whose send and receive buffers are of kinds `send` and
/// `recv`:
///  - device and host-accessible buffers in one call: InvalidArgument, because
///    neither executor can serve both without a hidden copy and a sync;
///  - device buffers without a device path: InvalidUsage.
/// Managed and pinned host memory count as host-accessible and run on the host
/// executor, as they did before device buffers were recognised.
/// `call` names the collective in the message ("allreduce").
void checkBufferKinds(std::string_view call, MemoryKind send, MemoryKind recv, bool devicePath);

/// Where a call's buffers are, for the executor.
struct BufferPlacement {
  bool onDevice = false;  ///< device memory: staged or run by the device path
  /// Known to CUDA (device, pinned or managed memory): the caller's stream may
  /// still be writing them, so the call must wait for it before reading.
  bool streamOrdered = false;
};

/// checkBufferKinds over classifyPointer of both buffers and haveDevicePath().
/// Pass nullptr for a buffer the call does not touch (its count is 0 there).
/// While `driver` says no CUDA driver is loaded, nothing is CUDA memory and
/// CUDA is asked nothing (no runtime loaded, no system call).
BufferPlacement checkBufferLocations(std::string_view call, const void* send, const void* recv,
                                     DriverWatch& driver);

}  // namespace loom::device
