#include "device/buffer_rules.h"

#include "core/error.h"

namespace loom::device {

bool haveCudaExecutor() { return false; }

void checkBufferKinds(std::string_view call, MemoryKind send, MemoryKind recv, bool cudaExecutor) {
  const bool sendOnDevice = !hostAccessible(send);
  const bool recvOnDevice = !hostAccessible(recv);
  if (sendOnDevice != recvOnDevice) {
    raise(ErrorCode::InvalidArgument,
          "{}: sendbuff is {} memory but recvbuff is {} memory; one call takes host or device "
          "buffers, not both",
          call, memoryKindName(send), memoryKindName(recv));
  }
  if (sendOnDevice && !cudaExecutor) {
    raise(ErrorCode::InvalidUsage,
          "{}: device buffers need the CUDA executor (not built/no device)", call);
  }
}

void checkBufferLocations(std::string_view call, const void* send, const void* recv) {
  const DeviceRuntime& runtime = deviceRuntime();
  // Without a runtime no pointer can be device memory: skip both lookups.
  if (!runtime.available) return;
  // A call that uses one buffer (send, recv, count 0 on one side) is judged on
  // that buffer alone: it cannot mix anything.
  const MemoryKind s = classifyPointer(runtime, send != nullptr ? send : recv);
  const MemoryKind r = classifyPointer(runtime, recv != nullptr ? recv : send);
  checkBufferKinds(call, s, r, haveCudaExecutor());
}

}  // namespace loom::device
