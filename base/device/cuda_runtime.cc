#include "device/cuda_runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <iterator>

#include "core/error.h"

namespace loom::device {
namespace {

// Newest first; the unversioned name is what a toolkit (not a driver-only
// install) provides and is tried last.
constexpr const char* kDefaultSonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};

DeviceRuntime unavailable(DeviceRuntime rt, const std::string& why) {
  rt.available = false;
  rt.reason = "no CUDA runtime/driver: " + why;
  return rt;
}

template <typename F>
bool bind(void* handle, const char* name, F* out, std::string& missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) missing += missing.empty() ? name : std::string(", ") + name;
  return *out != nullptr;
}

}  // namespace

void DeviceRuntime::check(CudaStatus status, const char* what) const {
  if (status == 0) return;
  const char* text = getErrorString != nullptr ? getErrorString(status) : nullptr;
  raise(ErrorCode::CudaError, "{}: {} (cuda error {})", what, text != nullptr ? text : "unknown",
        status);
}

DeviceRuntime loadDeviceRuntime(const char* const* sonames, size_t count) {
  DeviceRuntime rt;
  void* handle = nullptr;
  std::string tried;
  // A runtime the process already has comes first (a CUDA 12 application must
  // not get a second, CUDA 13 runtime beside its own, which may not even run
  // on its driver).
  for (size_t i = 0; i < count && handle == nullptr; ++i) {
    handle = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle != nullptr) rt.library = sonames[i];
  }
  for (size_t i = 0; i < count && handle == nullptr; ++i) {
    handle = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      rt.library = sonames[i];
    } else {
      const char* why = dlerror();
      tried += fmt::format("{}{}", tried.empty() ? "" : "; ", why != nullptr ? why : sonames[i]);
    }
  }
  if (handle == nullptr) {
    return unavailable(std::move(rt), tried.empty() ? "no library names given" : tried);
  }
  std::string missing;
  bind(handle, "cudaGetDeviceCount", &rt.getDeviceCount, missing);
  bind(handle, "cudaGetErrorString", &rt.getErrorString, missing);
  bind(handle, "cudaPointerGetAttributes", &rt.pointerGetAttributes, missing);
  bind(handle, "cudaMemcpyAsync", &rt.memcpyAsync, missing);
  bind(handle, "cudaStreamSynchronize", &rt.streamSynchronize, missing);
  bind(handle, "cudaGetLastError", &rt.getLastError, missing);
  bind(handle, "cudaGetDevice", &rt.getDevice, missing);
  bind(handle, "cudaSetDevice", &rt.setDevice, missing);
  bind(handle, "cudaEventCreateWithFlags", &rt.eventCreateWithFlags, missing);
  bind(handle, "cudaEventRecord", &rt.eventRecord, missing);
  bind(handle, "cudaEventDestroy", &rt.eventDestroy, missing);
  bind(handle, "cudaStreamWaitEvent", &rt.streamWaitEvent, missing);
  bind(handle, "cudaEventQuery", &rt.eventQuery, missing);
  bind(handle, "cudaEventSynchronize", &rt.eventSynchronize, missing);
  bind(handle, "cudaMalloc", &rt.malloc, missing);
  bind(handle, "cudaFree", &rt.free, missing);
  bind(handle, "cudaMallocHost", &rt.mallocHost, missing);
  bind(handle, "cudaFreeHost", &rt.freeHost, missing);
  bind(handle, "cudaMemsetAsync", &rt.memsetAsync, missing);
  bind(handle, "cudaIpcGetMemHandle", &rt.ipcGetMemHandle, missing);
  bind(handle, "cudaIpcOpenMemHandle", &rt.ipcOpenMemHandle, missing);
  bind(handle, "cudaIpcCloseMemHandle", &rt.ipcCloseMemHandle, missing);
  bind(handle, "cudaDeviceCanAccessPeer", &rt.deviceCanAccessPeer, missing);
  bind(handle, "cudaDeviceEnablePeerAccess", &rt.deviceEnablePeerAccess, missing);
  std::string optional;
  bind(handle, "cudaDeviceGetPCIBusId", &rt.deviceGetPCIBusId, optional);
  if (!missing.empty()) {
    // The handle stays open on purpose (see deviceRuntime()): closing a CUDA
    // runtime is not something a library may do behind its user's back.
    const std::string why = fmt::format("{} lacks {}", rt.library, missing);
    return unavailable(std::move(rt), why);
  }
  const CudaStatus status = rt.getDeviceCount(&rt.deviceCount);
  if (status != 0) {
    // No driver, a driver older than the runtime, or no device: all say so here.
    const char* text = rt.getErrorString(status);
    rt.deviceCount = 0;
    const std::string why = fmt::format("{}: cudaGetDeviceCount: {} (cuda error {})", rt.library,
                                        text != nullptr ? text : "?", status);
    return unavailable(std::move(rt), why);
  }
  if (rt.deviceCount == 0) {
    const std::string why = rt.library + ": no CUDA device";
    return unavailable(std::move(rt), why);
  }
  rt.available = true;
  return rt;
}

bool cudaDriverLoaded() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // drops only the reference this lookup added
  return true;
}

const DeviceRuntime& deviceRuntime() {
  static const DeviceRuntime runtime =
      loadDeviceRuntime(kDefaultSonames, std::size(kDefaultSonames));
  return runtime;
}

}  // namespace loom::device
