// The int8 codec as the plan walker applies it to one message (walk_codec.h,
// codec steps): the host codec's block math (compression/int8_math.h) and
// stochastic-rounding bits (counter_hash.h), so a ring walked with a wire
// codec rounds every hop exactly as the host's compressed ring does.
//
// A message of n elements is laid out as the host lays out an encoding: the
// scales of its ceil(n / block) blocks, then one code per element. Messages
// hold whole blocks (codecSliceElements), so the blocks of a message are the
// blocks the host cuts from the same chunk.
#pragma once

#include <cstdint>

#include "compression/counter_hash.h"
#include "compression/int8_math.h"

namespace loom::walk::wire {

/// One message's scales and codes, inside a FIFO slot.
template <typename Byte>
struct Int8Message {
  Byte* base;
  uint64_t blocks;
  LOOM_HD float* scales() const { return reinterpret_cast<float*>(base); }
  LOOM_HD int8_t* codes() const { return reinterpret_cast<int8_t*>(base + blocks * 4); }
};

template <typename Byte>
LOOM_HD Int8Message<Byte> int8Message(Byte* slot, uint64_t n, uint32_t block) {
  return {slot, (n + block - 1) / block};
}

/// Element i of a received message, decoded.
LOOM_HD float decodedAt(const Int8Message<const char>& m, uint64_t i, uint32_t block) {
  const float scale = reinterpret_cast<const float*>(m.base)[i / block];
  return codec::int8Dequantize(reinterpret_cast<const int8_t*>(m.base + m.blocks * 4)[i], scale);
}

/// The code of one value of a block whose absmax made `block`, as
/// Int8Codec::encode writes it; stochastic rounding draws the bits of element
/// `index` (its place in the tensor) from the step's key.
LOOM_HD int8_t encodeValue(float value, const codec::Int8Block& block, bool stochastic,
                           uint64_t key, uint64_t index) {
  if (!block.finite) return 0;  // the NaN scale decides the values
  if (stochastic) return codec::int8QuantizeStochastic(value, block, codec::streamBits(key, index));
  return codec::int8QuantizeNearest(value, block);
}

}  // namespace loom::walk::wire
