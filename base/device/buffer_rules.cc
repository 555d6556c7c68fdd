#include "device/buffer_rules.h"

#include "core/error.h"

namespace loom::device {

bool haveDevicePath() { return deviceRuntime().available; }

void checkBufferKinds(std::string_view call, MemoryKind send, MemoryKind recv, bool devicePath) {
  const bool sendOnDevice = !hostAccessible(send);
  const bool recvOnDevice = !hostAccessible(recv);
  if (sendOnDevice != recvOnDevice) {
    raise(ErrorCode::InvalidArgument,
          "{}: sendbuff is {} memory but recvbuff is {} memory; one call takes host or device "
          "buffers, not both",
          call, memoryKindName(send), memoryKindName(recv));
  }
  if (sendOnDevice && !devicePath) {
    raise(ErrorCode::InvalidUsage, "{}: device buffers need a CUDA runtime with a device", call);
  }
}

BufferPlacement checkBufferLocations(std::string_view call, const void* send, const void* recv,
                                     DriverWatch& driver) {
  // Without a loaded driver nothing is CUDA memory; do not load CUDA to find out.
  if (!driver.loaded()) return {};
  const DeviceRuntime& runtime = deviceRuntime();
  // Without a runtime no pointer can be device memory: skip both lookups.
  if (!runtime.available) return {};
  // A call that uses one buffer (send, recv, count 0 on one side) is judged on
  // that buffer alone: it cannot mix anything.
  const MemoryKind s = classifyPointer(runtime, send != nullptr ? send : recv);
  const MemoryKind r = classifyPointer(runtime, recv != nullptr ? recv : send);
  checkBufferKinds(call, s, r, haveDevicePath());
  return {!hostAccessible(s), s != MemoryKind::Host || r != MemoryKind::Host};
}

}  // namespace loom::device
