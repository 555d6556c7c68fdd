// Block-wise absmax int8 codec. Layout of an encoding of n elements in blocks
// of B: ceil(n / B) fp32 scales, then n int8 codes; the last block may be
// short. Size is exact: 4 * ceil(n / B) + n bytes.
#pragma once

#include "compression/codec.h"

namespace loom {

class Int8Codec final : public Codec {
 public:
  explicit Int8Codec(const CodecConfig& config) : Codec(config) {}
  size_t encodedBytes(size_t n) const override { return numBlocks(n) * sizeof(float) + n; }

  size_t numBlocks(size_t n) const { return (n + config().block - 1) / config().block; }
  void decode(const void* src, size_t srcBytes, size_t n, DataType type, void* out) const override;
  void decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const override;

 protected:
  size_t encodeImpl(const void* src, DataType type, size_t n, void* dst,
                    const EncodeContext& context) const override;

 private:
  void checkSize(size_t srcBytes, size_t n) const;
};

}  // namespace loom
