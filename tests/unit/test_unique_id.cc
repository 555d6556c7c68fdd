#include <gtest/gtest.h>

#include "bootstrap/unique_id.h"
#include "core/error.h"

namespace loom {
namespace {

UniqueId sampleId(const std::string& host) {
  UniqueId id;
  id.host = host;
  id.port = 40123;
  for (size_t i = 0; i < id.secret.size(); ++i) id.secret[i] = static_cast<uint8_t>(7 * i + 1);
  id.job = 0x0123456789abcdefULL;
  return id;
}

TEST(UniqueId, RoundTripsIpv4AndIpv6) {
  for (const std::string host : {"127.0.0.1", "10.1.2.3", "::1", "fe80::1:2"}) {
    const UniqueId id = sampleId(host);
    const UniqueId back = UniqueId::deserialize(id.serialize());
    EXPECT_EQ(back.host, host);
    EXPECT_EQ(back.port, id.port);
    EXPECT_EQ(back.secret, id.secret);
    EXPECT_EQ(back.job, id.job);
    EXPECT_EQ(back.tag(), id.tag());
    const UniqueId fromHex = UniqueId::fromHex(id.toHex());
    EXPECT_EQ(fromHex.host, host);
    EXPECT_EQ(fromHex.secret, id.secret);
  }
}

TEST(UniqueId, HexIsLowercaseAnd256Digits) {
  const std::string hex = sampleId("127.0.0.1").toHex();
  ASSERT_EQ(hex.size(), 256u);
  for (char c : hex) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << c;
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(UniqueId::fromHex(upper).port, 40123);
}

TEST(UniqueId, EveryByteFlipIsRejected) {
  for (const std::string host : {"192.168.0.7", "2001:db8::5"}) {
    const loomUniqueId good = sampleId(host).serialize();
    for (size_t i = 0; i < LOOM_UNIQUE_ID_BYTES; ++i) {
      for (uint8_t mask : {0x01, 0x80, 0xff}) {
        loomUniqueId bad = good;
        bad.internal[i] = static_cast<char>(bad.internal[i] ^ mask);
        try {
          UniqueId::deserialize(bad);
          ADD_FAILURE() << "flip of byte " << i << " with mask " << int(mask) << " accepted";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
          EXPECT_NE(std::string(e.what()).find("malformed unique id"), std::string::npos);
        }
      }
    }
  }
}

TEST(UniqueId, AllZeroAndGarbageRejected) {
  loomUniqueId zero{};
  EXPECT_THROW(UniqueId::deserialize(zero), Error);
  loomUniqueId garbage;
  for (size_t i = 0; i < LOOM_UNIQUE_ID_BYTES; ++i) garbage.internal[i] = static_cast<char>(i * 37);
  EXPECT_THROW(UniqueId::deserialize(garbage), Error);
}

TEST(UniqueId, HexErrorsNameTheProblem) {
  const std::string hex = sampleId("127.0.0.1").toHex();
  auto expectMalformed = [](const std::string& text, const std::string& needle) {
    try {
      UniqueId::fromHex(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expectMalformed("", "0 hex digits");
  expectMalformed(hex.substr(1), "255 hex digits");
  expectMalformed(hex + "0", "257 hex digits");
  std::string bad = hex;
  bad[10] = 'g';
  expectMalformed(bad, "not a hex digit");
  std::string flipped = hex;
  flipped[100] = flipped[100] == '0' ? '1' : '0';
  expectMalformed(flipped, "checksum");
}

TEST(UniqueId, SerializeRejectsNonNumericHostAndPortZero) {
  UniqueId id = sampleId("localhost");
  EXPECT_THROW(id.serialize(), Error);
  id = sampleId("127.0.0.1");
  id.port = 0;
  EXPECT_THROW(id.serialize(), Error);
}

TEST(UniqueId, TagAndLinkKeyDependOnSecretAndJob) {
  UniqueId a = sampleId("127.0.0.1");
  UniqueId b = sampleId("10.0.0.1");
  EXPECT_EQ(a.tag(), b.tag());
  EXPECT_EQ(a.linkKey(), b.linkKey());
  b.secret[3] ^= 1;
  EXPECT_NE(a.tag(), b.tag());
  EXPECT_NE(a.linkKey(), b.linkKey());
  b = a;
  b.job ^= 1;
  EXPECT_NE(a.tag(), b.tag());
  EXPECT_NE(a.linkKey(), b.linkKey());
}

}  // namespace
}  // namespace loom
