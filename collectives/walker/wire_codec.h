// The int8 codec as the plan walker applies it to one message (plan_walker.h,
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

/// Encodes `len` values value(start) .. value(start + len - 1), one codec
/// block, as Int8Codec::encode does: the block's absmax, then each code
/// (stochastic bits drawn for element `firstIndex + i`, its index in the
/// tensor). Returns the block's scale; the codes go to codes[start ..].
template <typename Value>
LOOM_HD float encodeBlock(Value value, uint64_t start, uint64_t len, int8_t* codes, bool stochastic,
                          uint64_t key, uint64_t firstIndex) {
  uint32_t absmax = 0;
  for (uint64_t i = start; i < start + len; ++i) {
    const uint32_t m = codec::magnitudeBits(value(i));
    absmax = m > absmax ? m : absmax;
  }
  const codec::Int8Block block = codec::int8BlockFromAbsmax(absmax);
  for (uint64_t i = start; i < start + len; ++i) {
    if (!block.finite) {
      codes[i] = 0;  // the NaN scale decides the values
    } else if (stochastic) {
      codes[i] =
          codec::int8QuantizeStochastic(value(i), block, codec::streamBits(key, firstIndex + i));
    } else {
      codes[i] = codec::int8QuantizeNearest(value(i), block);
    }
  }
  return block.scale;
}

}  // namespace loom::walk::wire
