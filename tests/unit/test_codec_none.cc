// The identity codec, and what every codec shares: factory, types, sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "math/half.h"

namespace loom {
namespace {

TEST(CodecNone, LosslessForEveryFloatType) {
  auto codec = makeCodec(parseCodecConfig("none"));
  EXPECT_EQ(codec->config().kind, CodecKind::None);
  std::vector<float> x = {1.5f, -0.0f, 3e-40f, 65504.0f, -1e30f};
  std::vector<uint8_t> bytes(codec->encodedBytes(x.size()) + 3);
  const size_t written =
      codec->encode(x.data(), DataType::Float32, x.size(), bytes.data() + 3, bytes.size() - 3);
  EXPECT_EQ(written, 20u);
  std::vector<float> out(x.size());
  codec->decode(bytes.data() + 3, written, x.size(), DataType::Float32, out.data());
  EXPECT_EQ(0, std::memcmp(out.data(), x.data(), 20));  // -0 and denormals survive

  std::vector<uint16_t> h = {floatToHalf(1.5f), floatToHalf(-2.0f), 0x7c00};
  std::vector<uint16_t> hout(3);
  codec->encode(h.data(), DataType::Float16, 3, bytes.data(), bytes.size());
  codec->decode(bytes.data(), 12, 3, DataType::Float16, hout.data());
  EXPECT_EQ(hout, h);

  std::vector<float> acc = {1, 1, 1};
  codec->decodeAccumulate(bytes.data(), 12, 3, acc.data());
  EXPECT_EQ(acc[0], 2.5f);
  EXPECT_EQ(acc[1], -1.0f);
  EXPECT_TRUE(std::isinf(acc[2]));
  EXPECT_THROW(codec->decode(bytes.data(), 11, 3, DataType::Float32, out.data()), Error);
  EXPECT_THROW(codec->encode(h.data(), DataType::Int32, 3, bytes.data(), bytes.size()), Error);
}

// The three codecs share the interface contract: encode returns at most
// encodedBytes(n), and decoding into fp32 then adding equals decodeAccumulate.
TEST(CodecAll, InterfaceContract) {
  for (const char* text : {"none", "int8", "int8:block=32,stochastic,seed=5", "topk:0.05"}) {
    auto codec = makeCodec(parseCodecConfig(text));
    for (size_t n : {0ul, 1ul, 31ul, 1000ul}) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
      std::vector<uint8_t> bytes(codec->encodedBytes(n));
      const size_t written =
          codec->encode(x.data(), DataType::Float32, n, bytes.data(), bytes.size(), {0, 1});
      EXPECT_LE(written, bytes.size()) << text;
      std::vector<float> d(n), acc(n, 0.5f);
      codec->decode(bytes.data(), written, n, DataType::Float32, d.data());
      codec->decodeAccumulate(bytes.data(), written, n, acc.data());
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(acc[i], 0.5f + d[i]) << text << " " << i;
    }
  }
}

}  // namespace
}  // namespace loom
