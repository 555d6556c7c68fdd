#include "compression/none_codec.h"

#include <cstring>

#include "compression/codec_math.h"
#include "compression/element_io.h"

namespace loom {

using namespace codec;

size_t NoneCodec::encodeImpl(const void* src, DataType type, size_t n, void* dst,
                             const EncodeContext&) const {
  const size_t bytes = encodedBytes(n);
  withLoader(src, type, [&](auto load) {
    auto* out = static_cast<float*>(dst);
    for (size_t i = 0; i < n; ++i) {
      const float v = load(i);
      std::memcpy(out + i, &v, sizeof v);  // dst need not be aligned
    }
  });
  return bytes;
}

void NoneCodec::decode(const void* src, size_t srcBytes, size_t n, DataType type, void* out) const {
  if (srcBytes != encodedBytes(n)) {
    raise(ErrorCode::InvalidArgument, "codec none: {} bytes cannot hold {} elements", srcBytes, n);
  }
  const auto* in = static_cast<const unsigned char*>(src);
  withStorer(out, type, [&](auto store) {
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, in + i * sizeof v, sizeof v);
      store(i, v);
    }
  });
}

void NoneCodec::decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const {
  if (srcBytes != encodedBytes(n)) {
    raise(ErrorCode::InvalidArgument, "codec none: {} bytes cannot hold {} elements", srcBytes, n);
  }
  const auto* in = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, in + i * sizeof v, sizeof v);
    acc[i] = codec::addRn(acc[i], v);
  }
}

}  // namespace loom
