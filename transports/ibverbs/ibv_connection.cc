#include "transports/ibverbs/ibv_connection.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/wire.h"

namespace loom {
namespace {

// Byte offsets of the record's fields.
constexpr size_t kVersionAt = 8, kPortAt = 10, kGidIndexAt = 11, kMtuAt = 12, kLinkLayerAt = 13,
                 kLidAt = 14, kTagAt = 16, kRankAt = 24, kToRankAt = 28, kQpNumAt = 32, kPsnAt = 36,
                 kGidAt = 40, kRingAt = 56, kRkeyAt = 64, kSlotsAt = 68, kSlotBytesAt = 72;
static_assert(kSlotBytesAt + 8 == IbvConnection::kBytes);

constexpr uint32_t k24Bits = 1u << 24;
constexpr uint32_t kMaxRank = 0x7fffffff;  // ranks are ints
constexpr uint16_t kMaxUnicastLid = 0xbfff;

[[noreturn]] void bad(const char* field, const std::string& why) {
  raise(ErrorCode::RemoteError, "ibverbs connection message: {} {}", field, why);
}

}  // namespace

std::string IbvConnection::encode() const {
  std::string out(kBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kMagic, sizeof(kMagic));
  wire::putU16(p + kVersionAt, kVersion);
  p[kPortAt] = port;
  p[kGidIndexAt] = gidIndex;
  p[kMtuAt] = mtu;
  p[kLinkLayerAt] = static_cast<uint8_t>(linkLayer);
  wire::putU16(p + kLidAt, lid);
  wire::putU64(p + kTagAt, commTag);
  wire::putU32(p + kRankAt, rank);
  wire::putU32(p + kToRankAt, toRank);
  wire::putU32(p + kQpNumAt, qpNum);
  wire::putU32(p + kPsnAt, psn);
  std::memcpy(p + kGidAt, gid.data(), gid.size());
  wire::putU64(p + kRingAt, ringAddress);
  wire::putU32(p + kRkeyAt, rkey);
  wire::putU32(p + kSlotsAt, slots);
  wire::putU64(p + kSlotBytesAt, slotBytes);
  return out;
}

IbvConnection IbvConnection::decode(std::string_view bytes) {
  if (bytes.size() != kBytes) {
    bad("record", fmt::format("has {} bytes, expected {}", bytes.size(), kBytes));
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) bad("magic", "is not LOOMIBVC");
  if (const uint16_t version = wire::getU16(p + kVersionAt); version != kVersion) {
    bad("version", fmt::format("{} is not the supported {}", version, kVersion));
  }
  IbvConnection c;
  c.port = p[kPortAt];
  c.gidIndex = p[kGidIndexAt];
  c.mtu = p[kMtuAt];
  const uint8_t layer = p[kLinkLayerAt];
  c.lid = wire::getU16(p + kLidAt);
  c.commTag = wire::getU64(p + kTagAt);
  c.rank = wire::getU32(p + kRankAt);
  c.toRank = wire::getU32(p + kToRankAt);
  c.qpNum = wire::getU32(p + kQpNumAt);
  c.psn = wire::getU32(p + kPsnAt);
  std::memcpy(c.gid.data(), p + kGidAt, c.gid.size());
  c.ringAddress = wire::getU64(p + kRingAt);
  c.rkey = wire::getU32(p + kRkeyAt);
  c.slots = wire::getU32(p + kSlotsAt);
  c.slotBytes = wire::getU64(p + kSlotBytesAt);

  if (c.port == 0) bad("port", "0 is not a port (ports count from 1)");
  if (c.mtu < 1 || c.mtu > 5) bad("mtu", fmt::format("{} is not an ibv_mtu (1..5)", c.mtu));
  if (layer != static_cast<uint8_t>(IbvLinkLayer::InfiniBand) &&
      layer != static_cast<uint8_t>(IbvLinkLayer::Ethernet)) {
    bad("link layer", fmt::format("{} is neither 1 (InfiniBand) nor 2 (Ethernet)", layer));
  }
  c.linkLayer = static_cast<IbvLinkLayer>(layer);
  if (c.rank > kMaxRank) bad("rank", fmt::format("{} is out of range", c.rank));
  if (c.toRank > kMaxRank) bad("toRank", fmt::format("{} is out of range", c.toRank));
  if (c.qpNum >= k24Bits) bad("qp number", fmt::format("{:#x} exceeds 24 bits", c.qpNum));
  if (c.psn >= k24Bits) bad("psn", fmt::format("{:#x} exceeds 24 bits", c.psn));
  if (c.linkLayer == IbvLinkLayer::InfiniBand && (c.lid == 0 || c.lid > kMaxUnicastLid)) {
    bad("lid", fmt::format("{:#x} is not a unicast InfiniBand LID (1..0xbfff)", c.lid));
  }
  if (c.linkLayer == IbvLinkLayer::Ethernet &&
      std::all_of(c.gid.begin(), c.gid.end(), [](uint8_t b) { return b == 0; })) {
    bad("gid", "is zero on an Ethernet (RoCE) port");
  }
  if (c.slots < 1 || c.slots > kMaxSlots) {
    bad("slots", fmt::format("{} is outside 1..{}", c.slots, kMaxSlots));
  }
  if (c.slotBytes < 1 || c.slotBytes > kMaxSlotBytes) {
    bad("slotBytes", fmt::format("{} is outside 1..{}", c.slotBytes, kMaxSlotBytes));
  }
  // slots * slotBytes <= 2^33 by the limits above; the ring must also fit the address space.
  const uint64_t ringBytes = c.slots * c.slotBytes;
  if (c.ringAddress == 0 || c.ringAddress > UINT64_MAX - ringBytes) {
    bad("ring address",
        fmt::format("{:#x} + {} bytes is not a valid range", c.ringAddress, ringBytes));
  }
  return c;
}

std::string encodeIbvConnections(const std::vector<IbvConnection>& records) {
  std::string out;
  out.reserve(records.size() * IbvConnection::kBytes);
  for (const IbvConnection& r : records) out += r.encode();
  return out;
}

std::vector<IbvConnection> decodeIbvConnections(std::string_view bytes) {
  if (bytes.size() % IbvConnection::kBytes != 0) {
    raise(ErrorCode::RemoteError,
          "ibverbs connection messages: {} bytes is not a whole number of {} byte records",
          bytes.size(), IbvConnection::kBytes);
  }
  std::vector<IbvConnection> records;
  records.reserve(bytes.size() / IbvConnection::kBytes);
  for (size_t at = 0; at < bytes.size(); at += IbvConnection::kBytes) {
    records.push_back(IbvConnection::decode(bytes.substr(at, IbvConnection::kBytes)));
  }
  return records;
}

}  // namespace loom
