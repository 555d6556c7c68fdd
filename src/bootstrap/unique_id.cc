#include "bootstrap/unique_id.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>

#include "core/error.h"
#include "core/wire.h"

namespace loom {
namespace {

// Layout of the 128 bytes. Everything not listed is zero, and checked to be.
constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'I', 'D', '0', '1'};
constexpr uint16_t kVersion = 2;
constexpr size_t kVersionAt = 8;     // u16
constexpr size_t kFamilyAt = 10;     // u16: 4 or 6
constexpr size_t kPortAt = 12;       // u16
constexpr size_t kAddressAt = 16;    // 16 bytes; IPv4 uses the first 4
constexpr size_t kSecretAt = 32;     // 16 bytes
constexpr size_t kJobAt = 48;        // u64
constexpr size_t kChecksumAt = 120;  // u64 FNV-1a over bytes [0, 120)
static_assert(kChecksumAt + 8 == LOOM_UNIQUE_ID_BYTES);

[[noreturn]] void malformed(const std::string& why) {
  raise(ErrorCode::InvalidArgument, "malformed unique id: {}", why);
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

loomUniqueId UniqueId::serialize() const {
  uint8_t bytes[LOOM_UNIQUE_ID_BYTES] = {};
  std::memcpy(bytes, kMagic, sizeof(kMagic));
  wire::putU16(bytes + kVersionAt, kVersion);
  if (inet_pton(AF_INET, host.c_str(), bytes + kAddressAt) == 1) {
    wire::putU16(bytes + kFamilyAt, 4);
  } else if (inet_pton(AF_INET6, host.c_str(), bytes + kAddressAt) == 1) {
    wire::putU16(bytes + kFamilyAt, 6);
  } else {
    raise(ErrorCode::InvalidArgument, "unique id host '{}' is not a numeric IPv4/IPv6 address",
          host);
  }
  if (port == 0) raise(ErrorCode::InvalidArgument, "unique id for host {} has port 0", host);
  wire::putU16(bytes + kPortAt, port);
  std::memcpy(bytes + kSecretAt, secret.data(), secret.size());
  wire::putU64(bytes + kJobAt, job);
  wire::putU64(bytes + kChecksumAt, wire::fnv1a(bytes, kChecksumAt));
  loomUniqueId raw;
  std::memcpy(raw.internal, bytes, sizeof(bytes));
  return raw;
}

UniqueId UniqueId::deserialize(const loomUniqueId& raw) {
  uint8_t bytes[LOOM_UNIQUE_ID_BYTES];
  std::memcpy(bytes, raw.internal, sizeof(bytes));
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) malformed("bad magic (not a Loom id?)");
  const uint64_t expected = wire::fnv1a(bytes, kChecksumAt);
  const uint64_t stored = wire::getU64(bytes + kChecksumAt);
  if (stored != expected) {
    malformed(fmt::format("checksum {:016x} does not match contents ({:016x})", stored, expected));
  }
  const uint16_t version = wire::getU16(bytes + kVersionAt);
  if (version != kVersion) malformed(fmt::format("version {} (expected {})", version, kVersion));
  const uint16_t family = wire::getU16(bytes + kFamilyAt);
  if (family != 4 && family != 6) malformed(fmt::format("address family {} (4 or 6)", family));
  const size_t addressBytes = family == 4 ? 4 : 16;
  auto nonZero = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      if (bytes[i] != 0) return true;
    }
    return false;
  };
  if (nonZero(14, kAddressAt) || nonZero(kAddressAt + addressBytes, kSecretAt) ||
      nonZero(kJobAt + 8, kChecksumAt)) {
    malformed("reserved bytes are not zero");
  }
  UniqueId id;
  id.port = wire::getU16(bytes + kPortAt);
  if (id.port == 0) malformed("port 0");
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family == 4 ? AF_INET : AF_INET6, bytes + kAddressAt, text, sizeof(text));
  id.host = text;
  std::memcpy(id.secret.data(), bytes + kSecretAt, id.secret.size());
  id.job = wire::getU64(bytes + kJobAt);
  return id;
}

std::string UniqueId::toHex() const {
  const loomUniqueId raw = serialize();
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * LOOM_UNIQUE_ID_BYTES);
  for (char c : raw.internal) {
    const auto byte = static_cast<uint8_t>(c);
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

UniqueId UniqueId::fromHex(const std::string& hex) {
  if (hex.size() != 2 * LOOM_UNIQUE_ID_BYTES) {
    malformed(fmt::format("{} hex digits (expected {})", hex.size(), 2 * LOOM_UNIQUE_ID_BYTES));
  }
  loomUniqueId raw;
  for (size_t i = 0; i < LOOM_UNIQUE_ID_BYTES; ++i) {
    const int hi = hexValue(hex[2 * i]);
    const int lo = hexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      malformed(fmt::format("'{}' at position {} is not a hex digit", hex.substr(2 * i, 2), 2 * i));
    }
    raw.internal[i] = static_cast<char>((hi << 4) | lo);
  }
  return deserialize(raw);
}

namespace {

Digest derive(const UniqueId& id, std::string_view label) {
  uint8_t job[8];
  wire::putU64(job, id.job);
  return hmacSha256(id.secret, label, {job});
}

}  // namespace

uint64_t UniqueId::tag() const { return wire::getU64(derive(*this, "loom comm tag").data()); }

Digest UniqueId::linkKey() const { return derive(*this, "loom link key"); }

}  // namespace loom
