#include "cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>

namespace loom_nccl {
namespace {

/// The driver library if the process loaded it already, never loading it.
/// Looked up per call (an RTLD_NOLOAD dlopen only walks the list of loaded
/// libraries) rather than cached, which would be global state, and would miss
/// a driver loaded after the first call.
class LoadedDriver {
 public:
  LoadedDriver() : handle_(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {}
  ~LoadedDriver() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  LoadedDriver(const LoadedDriver&) = delete;
  LoadedDriver& operator=(const LoadedDriver&) = delete;

  bool loaded() const { return handle_ != nullptr; }

  /// `name` with the type of the declaration `Function` (from cuda.h), or nullptr.
  template <typename Function>
  Function* find(const char* name) const {
    return handle_ != nullptr ? reinterpret_cast<Function*>(dlsym(handle_, name)) : nullptr;
  }

 private:
  void* handle_;
};

}  // namespace

bool isDeviceMemory(const void* ptr) {
  if (ptr == nullptr) return false;
  const LoadedDriver driver;
  auto* getAttribute = driver.find<decltype(cuPointerGetAttribute)>("cuPointerGetAttribute");
  if (getAttribute == nullptr) return false;
  const auto address = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
  // Any error (not initialised, unknown pointer) means memory CUDA did not
  // allocate, which is host memory.
  unsigned int type = 0;
  if (getAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) != CUDA_SUCCESS) return false;
  if (type != CU_MEMORYTYPE_DEVICE) return false;
  unsigned int managed = 0;
  const bool isManaged =
      getAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address) == CUDA_SUCCESS &&
      managed != 0;
  return !isManaged;
}

DeviceAllocation allocateOnCurrentDevice(size_t bytes, void** ptr) {
  const LoadedDriver driver;
  if (!driver.loaded()) return DeviceAllocation::NoContext;
  auto* getCurrent = driver.find<decltype(cuCtxGetCurrent)>("cuCtxGetCurrent");
  // cuda.h maps cuMemAlloc to its _v2 entry point, which is the exported name.
  auto* allocate = driver.find<decltype(cuMemAlloc)>("cuMemAlloc_v2");
  if (getCurrent == nullptr || allocate == nullptr) return DeviceAllocation::Failed;
  CUcontext context = nullptr;
  const CUresult asked = getCurrent(&context);
  // A process that loaded the driver but never initialised CUDA holds no
  // device memory and cannot use any: host memory, as without a driver.
  if (asked == CUDA_ERROR_NOT_INITIALIZED) return DeviceAllocation::NoContext;
  if (asked != CUDA_SUCCESS) return DeviceAllocation::Failed;
  if (context == nullptr) {
    // A thread that has made no CUDA call yet: the runtime would use device
    // 0's primary context there, and so does NCCL's allocation.
    auto* deviceGet = driver.find<decltype(cuDeviceGet)>("cuDeviceGet");
    auto* retain = driver.find<decltype(cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
    auto* makeCurrent = driver.find<decltype(cuCtxSetCurrent)>("cuCtxSetCurrent");
    CUdevice device = 0;
    if (deviceGet == nullptr || retain == nullptr || makeCurrent == nullptr ||
        deviceGet(&device, 0) != CUDA_SUCCESS || retain(&context, device) != CUDA_SUCCESS ||
        makeCurrent(context) != CUDA_SUCCESS) {
      return DeviceAllocation::Failed;
    }
  }
  CUdeviceptr address = 0;
  if (allocate(&address, bytes) != CUDA_SUCCESS) return DeviceAllocation::Failed;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the driver hands out addresses as integers
  *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  return DeviceAllocation::Done;
}

DeviceFree freeDeviceMemory(void* ptr) {
  if (!isDeviceMemory(ptr)) return DeviceFree::NotDevice;
  const LoadedDriver driver;
  auto* release = driver.find<decltype(cuMemFree)>("cuMemFree_v2");
  if (release == nullptr) return DeviceFree::Failed;
  return release(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr))) == CUDA_SUCCESS
             ? DeviceFree::Done
             : DeviceFree::Failed;
}

int currentCudaDevice() {
  const LoadedDriver driver;
  auto* getDevice = driver.find<decltype(cuCtxGetDevice)>("cuCtxGetDevice");
  CUdevice device = 0;
  if (getDevice == nullptr || getDevice(&device) != CUDA_SUCCESS) return 0;
  return static_cast<int>(device);
}

}  // namespace loom_nccl
