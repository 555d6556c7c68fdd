// A device allocation for tests: RAII, with copies to and from host vectors.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace loom::gpu_test {

#define LOOM_CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    // One spare byte so a zero-size buffer still has a distinct valid pointer.
    if (cudaMalloc(&ptr_, bytes + 1) != cudaSuccess) ptr_ = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void upload(const void* host) const {
    ASSERT_EQ(cudaMemcpy(ptr_, host, bytes_, cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> out(bytes_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

}  // namespace loom::gpu_test
