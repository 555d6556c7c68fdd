#include "device/memory_kind.h"

namespace loom::device {

std::string_view memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Host:
      return "host";
    case MemoryKind::PinnedHost:
      return "pinned host";
    case MemoryKind::Device:
      return "device";
    case MemoryKind::Managed:
      return "managed";
  }
  return "?";
}

MemoryKind classifyPointer(const DeviceRuntime& runtime, const void* ptr) {
  if (!runtime.available || ptr == nullptr) return MemoryKind::Host;
  CudaPointerAttributes attributes{};
  if (runtime.pointerGetAttributes(&attributes, ptr) != 0) {
    // Runtimes before CUDA 11 fail on unregistered host memory; the failure is
    // sticky in cudaGetLastError, so clear it before the user sees it.
    runtime.getLastError();
    return MemoryKind::Host;
  }
  switch (attributes.type) {
    case 1:
      return MemoryKind::PinnedHost;
    case 2:
      return MemoryKind::Device;
    case 3:
      return MemoryKind::Managed;
    default:
      return MemoryKind::Host;
  }
}

}  // namespace loom::device
