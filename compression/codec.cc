#include "compression/codec.h"

#include "compression/element_io.h"
#include "compression/int8_codec.h"
#include "compression/none_codec.h"
#include "compression/topk_codec.h"
#include "core/error.h"

namespace loom {

size_t Codec::encode(const void* src, DataType type, size_t n, void* dst, size_t dstBytes,
                     const EncodeContext& context) const {
  if (!codec::isCodecType(type)) codec::raiseUnsupportedType(type);
  const size_t room = encodedBytes(n);
  if (dstBytes < room) {
    raise(ErrorCode::InvalidArgument, "codec {}: {} bytes of room, {} elements need {}",
          codecKindName(config().kind), dstBytes, n, room);
  }
  return encodeImpl(src, type, n, dst, context);
}

std::unique_ptr<Codec> makeCodec(const CodecConfig& config) {
  validateCodecConfig(config);
  switch (config.kind) {
    case CodecKind::None:
      return std::make_unique<NoneCodec>(config);
    case CodecKind::Int8:
      return std::make_unique<Int8Codec>(config);
    case CodecKind::Topk:
      return std::make_unique<TopkCodec>(config);
  }
  raise(ErrorCode::InvalidArgument, "codec: unknown kind {}", static_cast<int>(config.kind));
}

}  // namespace loom
