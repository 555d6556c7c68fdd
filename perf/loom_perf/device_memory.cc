#include "device_memory.h"

#include <stdexcept>

#if defined(LOOM_PERF_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace perf {

#if defined(LOOM_PERF_CUDA)
namespace {

void ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

void* allocate(size_t bytes) {
  void* p = nullptr;
  ok(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void release(void* p) { cudaFree(p); }

void synchronize(void* stream) {
  ok(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

void copy(void* dst, const void* src, size_t bytes, bool toDevice, void* stream) {
  ok(cudaMemcpyAsync(dst, src, bytes, toDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                     static_cast<cudaStream_t>(stream)),
     "cudaMemcpyAsync");
  synchronize(stream);
}

void* createStream() {
  cudaStream_t stream = nullptr;
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return stream;
}

void destroyStream(void* stream) { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

const DeviceMemory kCuda{allocate, release, copy, synchronize, createStream, destroyStream};

}  // namespace

const DeviceMemory* cudaDeviceMemory(std::string* why) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    *why = std::string("no CUDA device: ") +
           (status != cudaSuccess ? cudaGetErrorString(status) : "cudaGetDeviceCount is 0");
    return nullptr;
  }
  return &kCuda;
}
#else
const DeviceMemory* cudaDeviceMemory(std::string* why) {
  *why = "this loom_perf was built without CUDA";
  return nullptr;
}
#endif

}  // namespace perf
