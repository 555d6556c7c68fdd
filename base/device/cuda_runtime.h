// The CUDA runtime, opened with dlopen at first use.
//
// Loom never links libcudart: the same libloom.so runs on machines with no
// toolkit, no driver or no GPU, and only then learns what it has. The few
// runtime entry points the host side needs are declared here with plain C
// types, so this header (and libloom's host code) compiles without cuda.h.
#pragma once

#include <cstddef>
#include <string>

namespace loom::device {

/// cudaError_t as an int; 0 is cudaSuccess.
using CudaStatus = int;
/// cudaStream_t; nullptr is the legacy default stream.
using CudaStream = void*;
/// cudaEvent_t.
using CudaEvent = void*;
/// cudaEventDisableTiming: events used only for ordering are cheaper without timing.
inline constexpr unsigned kEventDisableTiming = 0x02;

/// cudaMemcpyKind values used here (driver_types.h).
enum class CopyKind : int {
  HostToHost = 0,
  HostToDevice = 1,
  DeviceToHost = 2,
  DeviceToDevice = 3,
  Default = 4
};

/// struct cudaPointerAttributes as of CUDA 11-13, with room to spare: the
/// runtime fills at most its own (smaller) struct, and only the leading fields
/// are read.
struct CudaPointerAttributes {
  int type;  ///< cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed
  int device;
  void* devicePointer;
  void* hostPointer;
  long reserved[16];
};

/// cudaIpcMemHandle_t: 64 opaque bytes, passed by value.
struct CudaIpcMemHandle {
  char reserved[64];
};
/// cudaIpcMemLazyEnablePeerAccess.
inline constexpr unsigned kIpcLazyEnablePeerAccess = 0x01;
/// cudaErrorPeerAccessAlreadyEnabled: another communicator got there first.
inline constexpr CudaStatus kPeerAccessAlreadyEnabled = 704;

/// Entry points of libcudart. All are non-null when `available`.
struct DeviceRuntime {
  bool available = false;
  /// Why not available: "no CUDA runtime/driver: <reason>". Empty when available.
  std::string reason;
  std::string library;  ///< the soname that was opened, if any
  int deviceCount = 0;

  CudaStatus (*getDeviceCount)(int* count) = nullptr;
  const char* (*getErrorString)(CudaStatus status) = nullptr;
  CudaStatus (*pointerGetAttributes)(CudaPointerAttributes* attributes, const void* ptr) = nullptr;
  CudaStatus (*memcpyAsync)(void* dst, const void* src, size_t bytes, CopyKind kind,
                            CudaStream stream) = nullptr;
  CudaStatus (*streamSynchronize)(CudaStream stream) = nullptr;
  CudaStatus (*getLastError)() = nullptr;
  CudaStatus (*getDevice)(int* device) = nullptr;
  CudaStatus (*setDevice)(int device) = nullptr;
  CudaStatus (*eventCreateWithFlags)(CudaEvent* event, unsigned flags) = nullptr;
  CudaStatus (*eventRecord)(CudaEvent event, CudaStream stream) = nullptr;
  CudaStatus (*eventDestroy)(CudaEvent event) = nullptr;
  CudaStatus (*streamWaitEvent)(CudaStream stream, CudaEvent event, unsigned flags) = nullptr;
  CudaStatus (*eventQuery)(CudaEvent event) = nullptr;
  CudaStatus (*eventSynchronize)(CudaEvent event) = nullptr;
  CudaStatus (*malloc)(void** ptr, size_t bytes) = nullptr;
  CudaStatus (*free)(void* ptr) = nullptr;
  CudaStatus (*mallocHost)(void** ptr, size_t bytes) = nullptr;
  CudaStatus (*freeHost)(void* ptr) = nullptr;
  CudaStatus (*memsetAsync)(void* ptr, int value, size_t bytes, CudaStream stream) = nullptr;
  CudaStatus (*ipcGetMemHandle)(CudaIpcMemHandle* handle, void* ptr) = nullptr;
  CudaStatus (*ipcOpenMemHandle)(void** ptr, CudaIpcMemHandle handle, unsigned flags) = nullptr;
  CudaStatus (*ipcCloseMemHandle)(void* ptr) = nullptr;
  CudaStatus (*deviceCanAccessPeer)(int* can, int device, int peerDevice) = nullptr;
  CudaStatus (*deviceEnablePeerAccess)(int peerDevice, unsigned flags) = nullptr;
  /// Optional (topology detection only): nullptr where the runtime lacks it.
  CudaStatus (*deviceGetPCIBusId)(char* busId, int length, int device) = nullptr;

  /// Throws Error(CudaError) "<what>: <cuda error string> (<status>)" unless status is 0.
  void check(CudaStatus status, const char* what) const;
};

/// Whether this process has loaded the CUDA driver (libcuda.so.1); never loads
/// it. Without a driver no pointer can be CUDA memory, so a host-only process
/// can skip every CUDA question: it then never loads a CUDA runtime, and never
/// creates a context that would hold GPU memory. An RTLD_NOLOAD lookup, which
/// searches the library path when the driver is absent: per call, ask a
/// DriverWatch (device/driver_watch.h) instead.
bool cudaDriverLoaded();

/// The process's runtime handle, loaded on first call and never changed after.
/// This is Loom's only global for CUDA: a process has one driver, and probing
/// it costs milliseconds, so it is probed once (thread-safe static init) and
/// then only read; the library is never closed because kernels and memory the
/// user created through it outlive any communicator.
const DeviceRuntime& deviceRuntime();

/// Loads a runtime from the first of `sonames` that opens and counts devices.
/// deviceRuntime() calls this with the default names; tests call it with names
/// that do not exist to check the not-available path on any machine.
DeviceRuntime loadDeviceRuntime(const char* const* sonames, size_t count);

}  // namespace loom::device
