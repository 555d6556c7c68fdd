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
  auto* getCurrent = driver.find<decltype(cuCtxGetCurrent)>("cuCtxGetCurrent");
  // cuda.h maps cuMemAlloc to its _v2 entry point, which is the exported name.
  auto* allocate = driver.find<decltype(cuMemAlloc)>("cuMemAlloc_v2");
  CUcontext context = nullptr;
  if (getCurrent == nullptr || allocate == nullptr || getCurrent(&context) != CUDA_SUCCESS ||
      context == nullptr) {
    return DeviceAllocation::NoContext;
  }
  CUdeviceptr address = 0;
  if (allocate(&address, bytes) != CUDA_SUCCESS) return DeviceAllocation::Failed;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the driver hands out addresses as integers
  *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  return DeviceAllocation::Done;
}

bool freeDeviceMemory(void* ptr) {
  if (!isDeviceMemory(ptr)) return false;
  const LoadedDriver driver;
  auto* release = driver.find<decltype(cuMemFree)>("cuMemFree_v2");
  if (release == nullptr) return false;
  release(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr)));
  return true;
}

int currentCudaDevice() {
  const LoadedDriver driver;
  auto* getDevice = driver.find<decltype(cuCtxGetDevice)>("cuCtxGetDevice");
  CUdevice device = 0;
  if (getDevice == nullptr || getDevice(&device) != CUDA_SUCCESS) return 0;
  return static_cast<int>(device);
}

}  // namespace loom_nccl
