#include "compressed/device_codec.h"

#include <memory>

#include "compression/topk_codec.h"
#include "core/error.h"
#include "device/cuda_kernels.h"
#include "device/cuda_runtime.h"

namespace loom {
namespace {

size_t alignUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

void check(int status, const char* what) { device::deviceRuntime().check(status, what); }

class DeviceInt8 final : public DeviceCodec {
 public:
  DeviceInt8(const CodecConfig& config, void* stream)
      : config_(config), stream_(stream), k_(*device::cudaKernels().table) {}

  void encode(const void* src, DataType type, size_t n, void* dst,
              const EncodeContext& context) override {
    check(k_.int8Encode(src, static_cast<int>(type), n, dst, config_.block,
                        config_.stochastic ? 1 : 0, config_.seed, context.firstIndex,
                        context.counter, stream_),
          "int8 encode");
  }
  void encodeWithFeedback(const void* src, DataType type, size_t n, float* residual, void* dst,
                          const EncodeContext& context) override {
    // One kernel: compensate, encode and keep the loss in one pass.
    check(k_.int8EncodeFeedback(src, static_cast<int>(type), n, residual, dst, config_.block,
                                config_.stochastic ? 1 : 0, config_.seed, context.firstIndex,
                                context.counter, stream_),
          "int8 encode with error feedback");
  }
  void sum(const void* src, size_t stride, int sources, size_t n, float* sum) override {
    check(k_.int8DecodeSum(src, stride, sources, n, config_.block, sum, stream_),
          "int8 decode-sum");
  }
  void decodeAccumulate(const void* src, size_t n, float* acc) override {
    check(k_.int8DecodeAccumulate(src, n, config_.block, acc, stream_), "int8 decode-accumulate");
  }
  void decode(const void* src, size_t n, DataType type, void* out) override {
    check(k_.int8Decode(src, n, config_.block, static_cast<int>(type), out, stream_),
          "int8 decode");
  }

 private:
  CodecConfig config_;
  void* stream_;
  const LoomCudaKernels& k_;
};

class DeviceTopk final : public DeviceCodec {
 public:
  DeviceTopk(const CodecConfig& config, DeviceCodecWork work, void* stream)
      : host_(config), work_(work), stream_(stream), k_(*device::cudaKernels().table) {}

  void encode(const void* src, DataType type, size_t n, void* dst,
              const EncodeContext& /*deterministic*/) override {
    select(src, type, n, dst, work_.work);
  }
  void encodeWithFeedback(const void* src, DataType type, size_t n, float* residual, void* dst,
                          const EncodeContext& /*deterministic*/) override {
    // The compensated values sit before the selection's own work.
    auto* compensated = static_cast<float*>(work_.work);
    check(k_.compensate(src, static_cast<int>(type), n, residual, compensated, stream_),
          "error feedback compensate");
    select(compensated, DataType::Float32, n, dst,
           static_cast<char*>(work_.work) + alignUp(n * sizeof(float), 256));
    check(k_.topkForgetKept(dst, host_.encodedBytes(n), n, residual, stream_),
          "top-k error feedback update");
  }
  void sum(const void* src, size_t stride, int sources, size_t n, float* sum) override {
    check(device::deviceRuntime().memsetAsync(sum, 0, n * sizeof(float), stream_),
          "cudaMemsetAsync");
    for (int r = 0; r < sources; ++r) {
      decodeAccumulate(static_cast<const char*>(src) + static_cast<size_t>(r) * stride, n, sum);
    }
  }
  void decodeAccumulate(const void* src, size_t n, float* acc) override {
    check(k_.topkDecodeAccumulate(src, host_.encodedBytes(n), n, acc, nextStatus(), stream_),
          "top-k decode-accumulate");
  }
  void decode(const void* src, size_t n, DataType type, void* out) override {
    check(k_.topkDecode(src, host_.encodedBytes(n), n, static_cast<int>(type), out, nextStatus(),
                        stream_),
          "top-k decode");
  }
  size_t statusesUsed() const override { return used_; }

 private:
  void select(const void* src, DataType type, size_t n, void* dst, void* work) {
    check(k_.topkEncode(src, static_cast<int>(type), n, dst, host_.config().ratio, work, stream_),
          "top-k encode");
  }
  int* nextStatus() {
    if (used_ >= work_.statusSlots) {
      raise(ErrorCode::InternalError, "top-k on the device: {} decode statuses were set aside",
            work_.statusSlots);
    }
    return work_.statuses + used_++;
  }
  TopkCodec host_;
  DeviceCodecWork work_;
  void* stream_;
  const LoomCudaKernels& k_;
  size_t used_ = 0;
};

}  // namespace

size_t deviceCodecWorkBytes(const CodecConfig& config, size_t n, bool feedback) {
  if (config.kind != CodecKind::Topk) return 0;
  const size_t compensated = feedback ? alignUp(n * sizeof(float), 256) : 0;
  return compensated + alignUp(device::cudaKernels().table->topkEncodeWorkBytes(n), 256);
}

std::unique_ptr<DeviceCodec> makeDeviceCodec(const CodecConfig& config, DeviceCodecWork work,
                                             void* stream) {
  switch (config.kind) {
    case CodecKind::Int8:
      return std::make_unique<DeviceInt8>(config, stream);
    case CodecKind::Topk:
      return std::make_unique<DeviceTopk>(config, work, stream);
    default:
      raise(ErrorCode::InternalError, "no device codec for this compression kind");
  }
}

}  // namespace loom
