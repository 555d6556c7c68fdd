#include "compression/int8_codec.h"

#include <cstring>

#include "compression/counter_hash.h"
#include "compression/element_io.h"
#include "compression/int8_math.h"

namespace loom {

using namespace codec;

namespace {

// One block, two passes over it: the absmax, then the codes. A block is at most
// 256 KiB of fp32 and usually 1 KiB, so the second pass reads from L1.
// target_clones dispatches through an ifunc, which ThreadSanitizer's runtime
// cannot survive at start-up; TSan builds use the portable clone only.
#if defined(__SANITIZE_THREAD__)
#define LOOM_ENCODE_CLONES
#else
#define LOOM_ENCODE_CLONES __attribute__((target_clones("avx2", "default")))
#endif

template <typename Load>
LOOM_ENCODE_CLONES float encodeBlock(Load load, size_t start, size_t len, int8_t* codes,
                                     bool stochastic, uint64_t key, uint64_t firstIndex) {
  uint32_t absmax = 0;
  for (size_t i = 0; i < len; ++i) {
    const uint32_t m = magnitudeBits(load(start + i));
    absmax = m > absmax ? m : absmax;
  }
  const Int8Block block = int8BlockFromAbsmax(absmax);
  if (!block.finite) {
    std::memset(codes, 0, len);  // defined bytes; the NaN scale decides the values
  } else if (stochastic) {
    for (size_t i = 0; i < len; ++i) {
      const uint32_t random = streamBits(key, firstIndex + start + i);
      codes[i] = int8QuantizeStochastic(load(start + i), block, random);
    }
  } else {
    for (size_t i = 0; i < len; ++i) codes[i] = int8QuantizeNearest(load(start + i), block);
  }
  return block.scale;
}

float loadScale(const unsigned char* scales, size_t b) {
  float s;
  std::memcpy(&s, scales + b * sizeof s, sizeof s);
  return s;
}

}  // namespace

void Int8Codec::checkSize(size_t srcBytes, size_t n) const {
  if (srcBytes != encodedBytes(n)) {
    raise(ErrorCode::InvalidArgument,
          "codec int8: {} bytes cannot hold {} elements in blocks of {} (need {})", srcBytes, n,
          config().block, encodedBytes(n));
  }
}

size_t Int8Codec::encodeImpl(const void* src, DataType type, size_t n, void* dst,
                             const EncodeContext& context) const {
  const size_t bytes = encodedBytes(n);
  const size_t blocks = numBlocks(n);
  auto* scales = static_cast<unsigned char*>(dst);
  auto* codes = reinterpret_cast<int8_t*>(scales + blocks * sizeof(float));
  const uint64_t key = streamKey(config().seed, context.counter);
  const size_t B = config().block;
  withLoader(src, type, [&](auto load) {
    for (size_t b = 0; b < blocks; ++b) {
      const size_t start = b * B;
      const size_t len = n - start < B ? n - start : B;
      const float scale = encodeBlock(load, start, len, codes + start, config().stochastic, key,
                                      context.firstIndex);
      std::memcpy(scales + b * sizeof scale, &scale, sizeof scale);
    }
  });
  return bytes;
}

void Int8Codec::decode(const void* src, size_t srcBytes, size_t n, DataType type, void* out) const {
  checkSize(srcBytes, n);
  const size_t blocks = numBlocks(n);
  const auto* scales = static_cast<const unsigned char*>(src);
  const auto* codes = reinterpret_cast<const int8_t*>(scales + blocks * sizeof(float));
  const size_t B = config().block;
  withStorer(out, type, [&](auto store) {
    for (size_t b = 0; b < blocks; ++b) {
      const float scale = loadScale(scales, b);
      const size_t start = b * B;
      const size_t end = n - start < B ? n : start + B;
      for (size_t i = start; i < end; ++i) store(i, int8Dequantize(codes[i], scale));
    }
  });
}

void Int8Codec::decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const {
  checkSize(srcBytes, n);
  const size_t blocks = numBlocks(n);
  const auto* scales = static_cast<const unsigned char*>(src);
  const auto* codes = reinterpret_cast<const int8_t*>(scales + blocks * sizeof(float));
  const size_t B = config().block;
  for (size_t b = 0; b < blocks; ++b) {
    const float scale = loadScale(scales, b);
    const size_t start = b * B;
    const size_t len = n - start < B ? n - start : B;
    float* a = acc + start;
    const int8_t* c = codes + start;
    for (size_t i = 0; i < len; ++i) a[i] = addRn(a[i], int8Dequantize(c[i], scale));
  }
}

}  // namespace loom
