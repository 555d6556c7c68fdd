#if LOOM_HAVE_IBVERBS
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "core/wire.h"
#include "transports/ibverbs/ibv_connection.h"

namespace loom {
namespace {

IbvConnection sample() {
  IbvConnection c;
  c.commTag = 0x1122334455667788;
  c.rank = 3;
  c.toRank = 12;
  c.qpNum = 0xabcdef;
  c.psn = 0x123456;
  c.lid = 0x42;
  for (size_t i = 0; i < c.gid.size(); ++i) c.gid[i] = static_cast<uint8_t>(0xf0 + i);
  c.gidIndex = 3;
  c.port = 1;
  c.mtu = 5;
  c.linkLayer = IbvLinkLayer::InfiniBand;
  c.ringAddress = 0x7f0012345000;
  c.rkey = 0xdeadbeef;
  c.slots = 8;
  c.slotBytes = 512 * 1024;
  return c;
}

// The field named in the error message, so each rejection is pinned to its cause.
void expectRejected(const std::string& bytes, const std::string& field) {
  try {
    IbvConnection::decode(bytes);
    ADD_FAILURE() << "accepted a record with a bad " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError) << e.what();
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos)
        << "message does not name " << field << ": " << e.what();
  }
}

// Encodes the sample with one change applied to the bytes.
std::string patched(const std::function<void(uint8_t*)>& change) {
  std::string bytes = sample().encode();
  change(reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

std::string with(const std::function<void(IbvConnection&)>& change) {
  IbvConnection c = sample();
  change(c);
  return c.encode();
}

TEST(IbvConnection, RoundTrips) {
  const IbvConnection c = sample();
  const std::string bytes = c.encode();
  ASSERT_EQ(bytes.size(), IbvConnection::kBytes);
  EXPECT_EQ(bytes.substr(0, 8), "LOOMIBVC");
  EXPECT_EQ(IbvConnection::decode(bytes), c);
  EXPECT_EQ(IbvConnection::decode(bytes).encode(), bytes);

  IbvConnection roce = sample();
  roce.linkLayer = IbvLinkLayer::Ethernet;
  roce.lid = 0;  // RoCE has no LIDs
  EXPECT_EQ(IbvConnection::decode(roce.encode()), roce);
}

TEST(IbvConnection, LimitsAreAccepted) {
  const std::string edge = with([](IbvConnection& c) {
    c.qpNum = 0xffffff;
    c.psn = 0xffffff;
    c.lid = 0xbfff;
    c.mtu = 1;
    c.slots = IbvConnection::kMaxSlots;
    c.slotBytes = IbvConnection::kMaxSlotBytes;
    c.rank = 0x7fffffff;
    c.toRank = 0;
    c.port = 255;
    c.ringAddress = UINT64_MAX - uint64_t{IbvConnection::kMaxSlots} * IbvConnection::kMaxSlotBytes;
  });
  EXPECT_EQ(IbvConnection::decode(edge).encode(), edge);
  const std::string small = with([](IbvConnection& c) {
    c.slots = 1;
    c.slotBytes = 1;
    c.lid = 1;
  });
  EXPECT_EQ(IbvConnection::decode(small).encode(), small);
}

TEST(IbvConnection, RejectsEveryBadField) {
  expectRejected(patched([](uint8_t* p) { p[0] = 'X'; }), "magic");
  expectRejected(patched([](uint8_t* p) { wire::putU16(p + 8, 2); }), "version");
  expectRejected(with([](IbvConnection& c) { c.port = 0; }), "port");
  expectRejected(with([](IbvConnection& c) { c.mtu = 0; }), "mtu");
  expectRejected(with([](IbvConnection& c) { c.mtu = 6; }), "mtu");
  expectRejected(patched([](uint8_t* p) { p[13] = 0; }), "link layer");
  expectRejected(patched([](uint8_t* p) { p[13] = 3; }), "link layer");
  expectRejected(with([](IbvConnection& c) { c.rank = 0x80000000u; }), "rank");
  expectRejected(with([](IbvConnection& c) { c.toRank = 0xffffffffu; }), "toRank");
  expectRejected(with([](IbvConnection& c) { c.qpNum = 1u << 24; }), "qp number");
  expectRejected(with([](IbvConnection& c) { c.psn = 1u << 24; }), "psn");
  expectRejected(with([](IbvConnection& c) { c.psn = 0xffffffffu; }), "psn");
  expectRejected(with([](IbvConnection& c) { c.lid = 0; }), "lid");
  expectRejected(with([](IbvConnection& c) { c.lid = 0xc000; }), "lid");  // multicast
  expectRejected(with([](IbvConnection& c) {
                   c.linkLayer = IbvLinkLayer::Ethernet;
                   c.gid = {};
                 }),
                 "gid");
  expectRejected(with([](IbvConnection& c) { c.slots = 0; }), "slots");
  expectRejected(with([](IbvConnection& c) { c.slots = IbvConnection::kMaxSlots + 1; }), "slots");
  expectRejected(with([](IbvConnection& c) { c.slotBytes = 0; }), "slotBytes");
  expectRejected(with([](IbvConnection& c) { c.slotBytes = IbvConnection::kMaxSlotBytes + 1; }),
                 "slotBytes");
  // slots * slotBytes would overflow 64 bits if the limits were not checked first.
  expectRejected(with([](IbvConnection& c) { c.slotBytes = uint64_t{1} << 62; }), "slotBytes");
  expectRejected(with([](IbvConnection& c) { c.ringAddress = 0; }), "ring address");
  expectRejected(with([](IbvConnection& c) { c.ringAddress = UINT64_MAX - 4096; }), "ring address");
}

TEST(IbvConnection, RejectsWrongSizes) {
  const std::string bytes = sample().encode();
  for (size_t size : {size_t{0}, size_t{1}, size_t{8}, IbvConnection::kBytes - 1}) {
    expectRejected(bytes.substr(0, size), "record");
  }
  expectRejected(bytes + '\0', "record");
  expectRejected(bytes + bytes, "record");
}

TEST(IbvConnection, BundlesRoundTrip) {
  std::vector<IbvConnection> records;
  for (uint32_t peer = 0; peer < 5; ++peer) {
    IbvConnection c = sample();
    c.toRank = peer;
    c.qpNum = 100 + peer;
    records.push_back(c);
  }
  const std::string blob = encodeIbvConnections(records);
  EXPECT_EQ(blob.size(), 5 * IbvConnection::kBytes);
  EXPECT_EQ(decodeIbvConnections(blob), records);
  EXPECT_TRUE(decodeIbvConnections("").empty());
  EXPECT_EQ(encodeIbvConnections({}), "");
}

TEST(IbvConnection, BundlesRejectPartialAndBadRecords) {
  const std::string one = sample().encode();
  try {
    decodeIbvConnections(one + one.substr(0, 10));
    ADD_FAILURE() << "accepted a partial record";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("whole number"), std::string::npos) << e.what();
  }
  std::string bad = one + one;
  bad[IbvConnection::kBytes + 12] = 9;  // the second record's mtu
  try {
    decodeIbvConnections(bad);
    ADD_FAILURE() << "accepted a bad second record";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mtu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
