/* libcuda.so.1 of the emulated CUDA runtime (emulated_runtime.cc). libloom
 * asks whether a CUDA driver is loaded before it asks anything of CUDA, so the
 * emulated runtime depends on this library. The two driver calls the NCCL
 * shim makes (src/nccl_compat/cuda_driver.cc) answer from the emulated
 * runtime, looked up when called (the runtime is loaded by then). */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

int loomEmulatedDriver(void);
int cuPointerGetAttribute(void* data, int attribute, uint64_t ptr);
int cuCtxGetDevice(int* device);

int loomEmulatedDriver(void) { return 1; }

/* CUresult values and attributes used here (cuda.h). */
enum { kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3 };
enum { kMemoryTypeAttribute = 2, kIsManagedAttribute = 8 };
enum { kHostMemory = 1, kDeviceMemory = 2 };

/* struct cudaPointerAttributes, with room to spare (as src/device/cuda_runtime.h). */
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
