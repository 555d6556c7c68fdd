// The identity codec: fp32 on the wire, lossless for fp32, fp16 and bf16.
// A collective configured with `none` should skip the codec altogether; this
// class exists so that the codec plumbing can be tested without any loss.
#pragma once

#include "compression/codec.h"

namespace loom {

class NoneCodec final : public Codec {
 public:
  explicit NoneCodec(const CodecConfig& config) : Codec(config) {}
  size_t encodedBytes(size_t n) const override { return n * sizeof(float); }
  void decode(const void* src, size_t srcBytes, size_t n, DataType type, void* out) const override;
  void decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const override;

 protected:
  size_t encodeImpl(const void* src, DataType type, size_t n, void* dst,
                    const EncodeContext& context) const override;
};

}  // namespace loom
