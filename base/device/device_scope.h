// Makes a device current for a scope and restores the caller's afterwards
// (group calls may run on threads that never chose a device).
#pragma once

#include "device/cuda_runtime.h"

namespace loom::device {

class DeviceScope {
 public:
  explicit DeviceScope(int device) : rt_(deviceRuntime()) {
    rt_.check(rt_.getDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) rt_.check(rt_.setDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() { rt_.setDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  const DeviceRuntime& rt_;
  int previous_ = 0;
};

}  // namespace loom::device
