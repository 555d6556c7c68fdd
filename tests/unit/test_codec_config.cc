// CodecConfig: the text forms of LOOM_COMPRESS / loom_perf --compress, and range checks.
#include <gtest/gtest.h>

#include <string>

#include "compression/codec.h"
#include "compression/codec_config.h"
#include "core/error.h"

namespace loom {
namespace {

TEST(CodecConfig, ParsesDocumentedForms) {
  EXPECT_EQ(parseCodecConfig("none").kind, CodecKind::None);

  const CodecConfig i8 = parseCodecConfig("int8");
  EXPECT_EQ(i8.kind, CodecKind::Int8);
  EXPECT_EQ(i8.block, kDefaultInt8Block);
  EXPECT_FALSE(i8.stochastic);

  EXPECT_EQ(parseCodecConfig("int8:block=128").block, 128u);
  const CodecConfig sr = parseCodecConfig(" int8:block=64,stochastic,seed=7 ");
  EXPECT_EQ(sr.block, 64u);
  EXPECT_TRUE(sr.stochastic);
  EXPECT_EQ(sr.seed, 7u);
  EXPECT_FALSE(parseCodecConfig("int8:stochastic=0").stochastic);

  const CodecConfig tk = parseCodecConfig("topk:0.01");
  EXPECT_EQ(tk.kind, CodecKind::Topk);
  EXPECT_DOUBLE_EQ(tk.ratio, 0.01);
  EXPECT_DOUBLE_EQ(parseCodecConfig("topk:ratio=0.25").ratio, 0.25);
  EXPECT_DOUBLE_EQ(parseCodecConfig("topk").ratio, kDefaultTopkRatio);
  EXPECT_DOUBLE_EQ(parseCodecConfig("topk:1").ratio, 1.0);
}

// Every rejection names the text the user wrote, and the bad part of it.
void expectRejected(const std::string& text, const std::string& part) {
  try {
    parseCodecConfig(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + text + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST(CodecConfig, RejectsBadTextNamingIt) {
  expectRejected("", "unknown kind");
  expectRejected("zstd", "zstd");
  expectRejected("INT8", "INT8");
  expectRejected("none:1", "no options");
  expectRejected("int8:", "nothing after");
  expectRejected("int8:block=100", "'100'");  // not a power of two
  expectRejected("int8:block=4", "'4'");      // too small
  expectRejected("int8:block=131072", "'131072'");
  expectRejected("int8:block=", "block ''");
  expectRejected("int8:block=12x", "'12x'");
  expectRejected("int8:block=-128", "'-128'");
  expectRejected("int8:blok=128", "blok");
  expectRejected("int8:block=64,,seed=1", "empty option");
  expectRejected("int8:block=64,", "empty option");
  expectRejected("int8:stochastic=yes", "'yes'");
  expectRejected("int8:seed=-1", "'-1'");
  expectRejected("topk:0", "'0'");
  expectRejected("topk:1.5", "'1.5'");
  expectRejected("topk:-0.1", "'-0.1'");
  expectRejected("topk:abc", "'abc'");
  expectRejected("topk:nan", "'nan'");
  expectRejected("topk:k=3", "k=3");
}

TEST(CodecConfig, ToStringRoundTrips) {
  for (const char* text : {"none", "int8:block=128", "int8:block=64,stochastic,seed=7",
                           "int8:block=256,seed=3", "topk:0.01", "topk:0.125"}) {
    const CodecConfig c = parseCodecConfig(text);
    EXPECT_EQ(toString(c), text);
    EXPECT_EQ(parseCodecConfig(toString(c)), c);
  }
}

TEST(CodecConfig, ValidateAndFactoryRejectOutOfRange) {
  CodecConfig c;
  c.kind = CodecKind::Int8;
  c.block = 96;
  EXPECT_THROW(validateCodecConfig(c), Error);
  EXPECT_THROW(makeCodec(c), Error);
  c.block = 0;
  EXPECT_THROW(makeCodec(c), Error);
  c.kind = CodecKind::Topk;
  c.ratio = 0.0;
  EXPECT_THROW(makeCodec(c), Error);
  c.ratio = 2.0;
  EXPECT_THROW(makeCodec(c), Error);
  c.kind = static_cast<CodecKind>(9);
  EXPECT_THROW(makeCodec(c), Error);
  // Fields the kind ignores are not checked: a topk config with block 0 is fine.
  c.kind = CodecKind::Topk;
  c.ratio = 0.5;
  EXPECT_NO_THROW(makeCodec(c));
}

}  // namespace
}  // namespace loom
