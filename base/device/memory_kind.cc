#include "device/memory_kind.h"

#include "core/names.h"

namespace loom::device {

namespace {

constexpr Named<MemoryKind> kMemoryKindNames[] = {{MemoryKind::Host, "host"},
                                                  {MemoryKind::PinnedHost, "pinned host"},
                                                  {MemoryKind::Device, "device"},
                                                  {MemoryKind::Managed, "managed"}};

/// What `runtime` says of `ptr`; type 0 (unregistered) when there is no
/// runtime, no pointer, or the runtime does not know it.
CudaPointerAttributes attributesOf(const DeviceRuntime& runtime, const void* ptr) {
  CudaPointerAttributes attributes{};
  if (!runtime.available || ptr == nullptr) return attributes;
  if (runtime.pointerGetAttributes(&attributes, ptr) != 0) {
    // Runtimes before CUDA 11 fail on unregistered host memory; the failure is
    // sticky in cudaGetLastError, so clear it before the user sees it.
    runtime.getLastError();
    return CudaPointerAttributes{};
  }
  return attributes;
}

}  // namespace

std::string_view memoryKindName(MemoryKind kind) { return nameIn(kMemoryKindNames, kind); }

int deviceHolding(const DeviceRuntime& runtime, const void* ptr) {
  const CudaPointerAttributes attributes = attributesOf(runtime, ptr);
  return attributes.type == 2 ? attributes.device : -1;
}

MemoryKind classifyPointer(const DeviceRuntime& runtime, const void* ptr) {
  const CudaPointerAttributes attributes = attributesOf(runtime, ptr);
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
