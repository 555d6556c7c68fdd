#include "compressed/device_feedback.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/error.h"
#include "device/cuda_runtime.h"
#include "device/device_scope.h"

namespace loom {
namespace {

/// The per-thread default stream: unlike the legacy one it does not wait for
/// every blocking stream of the device, some of which may hold a walk that
/// spins until its peers arrive.
// NOLINTNEXTLINE(performance-no-int-to-ptr): cudaStreamPerThread is the handle 0x2
void* const kPerThreadStream = reinterpret_cast<void*>(uintptr_t{2});

class DeviceResidual final : public ResidualCopy {
 public:
  DeviceResidual(int device, size_t n) : device_(device), n_(n) {
    const device::DeviceRuntime& rt = device::deviceRuntime();
    rt.check(rt.malloc(reinterpret_cast<void**>(&data_), std::max<size_t>(n, 1) * sizeof(float)),
             "cudaMalloc of an error-feedback residual");
    const device::CudaStatus status =
        rt.eventCreateWithFlags(&written_, device::kEventDisableTiming);
    if (status != 0) {
      rt.free(data_);
      rt.check(status, "cudaEventCreateWithFlags");
    }
  }
  ~DeviceResidual() override {
    const device::DeviceRuntime& rt = device::deviceRuntime();
    // The kernels of the last call may still write it.
    if (recorded_) rt.eventSynchronize(written_);
    rt.free(data_);
    rt.eventDestroy(written_);
  }
  DeviceResidual(const DeviceResidual&) = delete;
  DeviceResidual& operator=(const DeviceResidual&) = delete;

  int device() const { return device_; }
  float* data() const { return data_; }

  /// Orders `stream` after the last work that wrote the residual.
  void follow(void* stream) const {
    if (!recorded_) return;
    const device::DeviceRuntime& rt = device::deviceRuntime();
    rt.check(rt.streamWaitEvent(stream, written_, 0), "cudaStreamWaitEvent");
  }
  void upload(std::span<const float> host, void* stream) const {
    if (host.empty()) return;
    const device::DeviceRuntime& rt = device::deviceRuntime();
    // A pageable source is copied before the call returns, so the host may
    // change it right after.
    rt.check(rt.memcpyAsync(data_, host.data(), host.size_bytes(), device::CopyKind::HostToDevice,
                            stream),
             "cudaMemcpyAsync of an error-feedback residual");
  }
  void written(void* stream) {
    const device::DeviceRuntime& rt = device::deviceRuntime();
    rt.check(rt.eventRecord(written_, stream), "cudaEventRecord");
    recorded_ = true;
  }
  void download(std::span<float> host) override {
    if (host.size() != n_) {
      raise(ErrorCode::InternalError, "error feedback: {} elements asked of a residual of {}",
            host.size(), n_);
    }
    if (host.empty()) return;
    const device::DeviceScope scope(device_);
    const device::DeviceRuntime& rt = device::deviceRuntime();
    if (recorded_) rt.check(rt.eventSynchronize(written_), "cudaEventSynchronize");
    rt.check(rt.memcpyAsync(host.data(), data_, host.size_bytes(), device::CopyKind::DeviceToHost,
                            kPerThreadStream),
             "cudaMemcpyAsync of an error-feedback residual");
    rt.check(rt.streamSynchronize(kPerThreadStream), "cudaStreamSynchronize");
  }

 private:
  int device_;
  size_t n_;
  float* data_ = nullptr;
  void* written_ = nullptr;
  bool recorded_ = false;
};

}  // namespace

float* deviceResidual(ErrorFeedback& feedback, int device, void* stream) {
  auto* copy = dynamic_cast<DeviceResidual*>(feedback.deviceCopy());
  if (copy == nullptr || copy->device() != device) {
    // A copy on another device is pulled to the host first (setDeviceCopy).
    auto fresh = std::make_unique<DeviceResidual>(device, feedback.size());
    copy = fresh.get();
    feedback.setDeviceCopy(std::move(fresh));
  }
  copy->follow(stream);
  if (feedback.hostChangedSinceCopy()) {
    copy->upload(feedback.residual(), stream);
    feedback.deviceCopyRefreshed();
  }
  return copy->data();
}

void deviceResidualWritten(ErrorFeedback& feedback, void* stream) {
  auto* copy = dynamic_cast<DeviceResidual*>(feedback.deviceCopy());
  if (copy == nullptr) raise(ErrorCode::InternalError, "error feedback has no device residual");
  copy->written(stream);
  feedback.deviceCopyWritten();
}

}  // namespace loom
