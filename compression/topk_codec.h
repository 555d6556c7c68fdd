// Top-k sparsification codec. Layout of an encoding: a uint32 count c, then c
// uint32 indices in strictly ascending order, then c fp32 values. encode keeps
// exactly k = topkKeptCount(n, ratio) elements, so today the size is always
// encodedBytes(n); the contract only promises "at most", which leaves room for
// a variant that drops zeros. fp32 values keep fp16/bf16 inputs and fp32
// partial sums exact, at 8 bytes per kept element.
#pragma once

#include "compression/codec.h"

namespace loom {

class TopkCodec final : public Codec {
 public:
  explicit TopkCodec(const CodecConfig& config) : Codec(config) {}
  size_t encodedBytes(size_t n) const override;

  /// Elements kept from a chunk of n.
  size_t keptCount(size_t n) const;
  void decode(const void* src, size_t srcBytes, size_t n, DataType type, void* out) const override;
  void decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const override;

 protected:
  size_t encodeImpl(const void* src, DataType type, size_t n, void* dst,
                    const EncodeContext& context) const override;

 private:
  /// Validates the header and size; returns the count.
  size_t checkedCount(const void* src, size_t srcBytes, size_t n) const;
};

}  // namespace loom
