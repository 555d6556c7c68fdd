// The codecs' device kernels (plugin, base/device/cuda_kernels_abi.h) behind
// one interface, as the kernel path's compressed collectives use them
// (device_walk_compressed.cc): int8 and top-k, each producing the host
// codec's bytes and floats. Every method enqueues on the codec's stream and
// throws loom::Error when a launch is refused. Internal to src/compressed.
#pragma once

#include <cstddef>
#include <memory>

#include "compression/codec.h"
#include "core/types.h"

namespace loom {

/// Device memory one call's codec kernels may use.
struct DeviceCodecWork {
  void* work = nullptr;     ///< DeviceCodec::workBytes bytes, 256-byte aligned
  int* statuses = nullptr;  ///< device ints, one per checked decode of the call
  size_t statusSlots = 0;
};

class DeviceCodec {
 public:
  virtual ~DeviceCodec() = default;
  /// Encodes n elements of `type` into dst (encodedBytes(n) of the host codec).
  virtual void encode(const void* src, DataType type, size_t n, void* dst,
                      const EncodeContext& context) = 0;
  /// Encodes src + residual (fp32) and leaves in residual what the encoding
  /// lost (ErrorFeedback's compensate, encode and update).
  virtual void encodeWithFeedback(const void* src, DataType type, size_t n, float* residual,
                                  void* dst, const EncodeContext& context) = 0;
  /// sum = the `sources` encodings of n elements at src + r * stride added
  /// in order r = 0, 1, ... from +0 (the host's rank-order sum).
  virtual void sum(const void* src, size_t stride, int sources, size_t n, float* sum) = 0;
  /// acc[i] += the decoded element i (fp32, one rounding each), as the host
  /// codec's decodeAccumulate.
  virtual void decodeAccumulate(const void* src, size_t n, float* acc) = 0;
  /// Decodes an encoding of n elements into `type`.
  virtual void decode(const void* src, size_t n, DataType type, void* out) = 0;
  /// Checked decodes so far: their statuses are the first this many slots.
  virtual size_t statusesUsed() const { return 0; }
};

/// Device work bytes a call needs to encode up to n elements (with error
/// feedback or not) with `config`.
size_t deviceCodecWorkBytes(const CodecConfig& config, size_t n, bool feedback);

/// The device codec of `config` (int8 or top-k), enqueuing on `stream`.
std::unique_ptr<DeviceCodec> makeDeviceCodec(const CodecConfig& config, DeviceCodecWork work,
                                             void* stream);

}  // namespace loom
