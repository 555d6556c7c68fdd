// The codec interface: what a collective calls to compress a chunk in flight.
//
// A collective encodes a chunk of n elements into a link slot whose size it
// knows in advance (encodedBytes(n)), and the receiver decodes it into a typed
// output or adds it into an fp32 accumulator. The encoded form does not depend
// on the element type it was encoded from: fp32, fp16 and bf16 chunks all
// encode to the same format and any of them can be decoded into any of those
// types. That is what lets the owner of a chunk sum fp16 contributions in an
// fp32 accumulator and encode the fp32 sum once for the all-gather.
//
// Codecs are immutable after construction and hold no buffers: one instance
// can serve every thread and every call of a communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "compression/codec_config.h"
#include "core/types.h"

namespace loom {

/// Where a chunk sits, for stochastic rounding: the random bits for an element
/// are a pure function of (config.seed, counter, firstIndex + i), so they do not
/// depend on which rank encodes it or how the tensor is cut into chunks.
struct EncodeContext {
  uint64_t firstIndex = 0;  ///< index of the chunk's element 0 within the tensor
  uint64_t counter = 0;     ///< agreed by all ranks; new per call (and per hop that re-encodes)
};

class Codec {
 public:
  virtual ~Codec() = default;

  const CodecConfig& config() const { return config_; }

  /// Bytes encode() writes for n elements: exact for none and int8 (every
  /// encoding of n elements has this size), an upper bound for topk.
  virtual size_t encodedBytes(size_t n) const = 0;

  /// Encodes n elements of `type` (fp32, fp16 or bf16) from src into dst, which
  /// has room for dstBytes >= encodedBytes(n). Returns the bytes written.
  /// dst needs no alignment. Throws InvalidArgument on a bad type or short dst.
  size_t encode(const void* src, DataType type, size_t n, void* dst, size_t dstBytes,
                const EncodeContext& context = {}) const;

  /// Decodes srcBytes (as returned by encode) holding n elements into out, n
  /// elements of `type`. Throws InvalidArgument when the bytes cannot be an
  /// encoding of n elements (they may come from another process); out is then
  /// unspecified.
  virtual void decode(const void* src, size_t srcBytes, size_t n, DataType type,
                      void* out) const = 0;
  /// acc[i] += decoded[i]: bit for bit what decode into fp32 then `+` gives, except
  /// that elements topk did not keep are left alone (so an acc of -0 stays -0).
  virtual void decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const = 0;

 protected:
  explicit Codec(const CodecConfig& config) : config_(config) {}

  // encode is non-virtual so that its checks live in one place; encodeImpl may
  // assume dst has room for encodedBytes(n).
  virtual size_t encodeImpl(const void* src, DataType type, size_t n, void* dst,
                            const EncodeContext& context) const = 0;

 private:
  CodecConfig config_;
};

/// Validates the config and builds its codec.
std::unique_ptr<Codec> makeCodec(const CodecConfig& config);

}  // namespace loom
