// Where a buffer lives, as far as choosing an executor is concerned.
#pragma once

#include <string_view>

#include "device/cuda_runtime.h"

namespace loom::device {

enum class MemoryKind {
  Host,        ///< ordinary (pageable) host memory, or unknown to CUDA
  PinnedHost,  ///< page-locked host memory registered with CUDA (cudaMallocHost, cudaHostRegister)
  Device,      ///< device memory (cudaMalloc): the CPU must not touch it
  Managed,     ///< unified memory (cudaMallocManaged): migrates on access
};

std::string_view memoryKindName(MemoryKind kind);

/// The host executor may read and write the buffer directly.
constexpr bool hostAccessible(MemoryKind kind) { return kind != MemoryKind::Device; }

/// Asks `runtime` about `ptr`. Without an available runtime no device memory can
/// exist, so the answer is Host (and nullptr is always Host). A pointer CUDA
/// does not know (cudaErrorInvalidValue on old runtimes) is Host too.
MemoryKind classifyPointer(const DeviceRuntime& runtime, const void* ptr);

/// The device whose memory `ptr` points into, or -1 for any other memory
/// (asked as classifyPointer asks).
int deviceHolding(const DeviceRuntime& runtime, const void* ptr);

/// classifyPointer(deviceRuntime(), ptr).
inline MemoryKind classifyPointer(const void* ptr) { return classifyPointer(deviceRuntime(), ptr); }

}  // namespace loom::device
