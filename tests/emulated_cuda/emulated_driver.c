/* libcuda.so.1 of the emulated CUDA runtime (emulated_runtime.cc). libloom
 * asks whether a CUDA driver is loaded before it asks anything of CUDA, so the
 * emulated runtime depends on this library. The driver calls the NCCL shim
 * makes (src/nccl_compat/cuda_driver.cc) answer from the emulated runtime,
 * looked up when called (the runtime is loaded by then). */
#include <dlfcn.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

int loomEmulatedDriver(void);
int cuPointerGetAttribute(void* data, int attribute, uint64_t ptr);
int cuCtxGetDevice(int* device);
int cuCtxGetCurrent(void** context);
int cuMemAlloc_v2(uint64_t* address, size_t bytes);
int cuMemFree_v2(uint64_t address);

int loomEmulatedDriver(void) { return 1; }

/* CUresult values and attributes used here (cuda.h). */
enum { kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3 };
enum { kMemoryTypeAttribute = 2, kIsManagedAttribute = 8 };
enum { kHostMemory = 1, kDeviceMemory = 2 };

/* struct cudaPointerAttributes, with room to spare (as base/device/cuda_runtime.h). */
typedef struct {
  int type;
  int device;
  void* devicePointer;
  void* hostPointer;
  long reserved[16];
} RuntimeAttributes;

int cuPointerGetAttribute(void* data, int attribute, uint64_t ptr) {
  typedef int (*GetAttributes)(RuntimeAttributes*, const void*);
  GetAttributes get = (GetAttributes)dlsym(RTLD_DEFAULT, "cudaPointerGetAttributes");
  if (get == NULL || data == NULL) return kNotInitialized;
  RuntimeAttributes a;
  memset(&a, 0, sizeof a);
  if (get(&a, (const void*)(uintptr_t)ptr) != 0 || a.type == 0) return kInvalidValue;
  switch (attribute) {
    case kMemoryTypeAttribute:
      *(unsigned int*)data = a.type == 2 ? kDeviceMemory : kHostMemory;
      return kSuccess;
    case kIsManagedAttribute:
      *(unsigned int*)data = 0;
      return kSuccess;
    default:
      return kInvalidValue;
  }
}

int cuCtxGetDevice(int* device) {
  typedef int (*GetDevice)(int*);
  GetDevice get = (GetDevice)dlsym(RTLD_DEFAULT, "cudaGetDevice");
  if (get == NULL || device == NULL) return kNotInitialized;
  return get(device) == 0 ? kSuccess : kInvalidValue;
}

/* A context is current once the runtime answers for a device (the runtime
 * makes its primary context at its first call). */
int cuCtxGetCurrent(void** context) {
  int device = -1;
  if (context == NULL) return kInvalidValue;
  *context = cuCtxGetDevice(&device) == kSuccess ? (void*)&loomEmulatedDriver : NULL;
  return kSuccess;
}

int cuMemAlloc_v2(uint64_t* address, size_t bytes) {
  typedef int (*Malloc)(void**, size_t);
  Malloc allocate = (Malloc)dlsym(RTLD_DEFAULT, "cudaMalloc");
  void* p = NULL;
  if (allocate == NULL || address == NULL) return kNotInitialized;
  if (allocate(&p, bytes) != 0) return kInvalidValue;
  *address = (uint64_t)(uintptr_t)p;
  return kSuccess;
}

int cuMemFree_v2(uint64_t address) {
  typedef int (*Free)(void*);
  Free release = (Free)dlsym(RTLD_DEFAULT, "cudaFree");
  if (release == NULL) return kNotInitialized;
  return release((void*)(uintptr_t)address) == 0 ? kSuccess : kInvalidValue;
}
