// The rendezvous wire protocol, shared by server and client. All integers are
// little-endian.
//
//   client -> server  hello: magic[8] "LOOMBS01", secret[16], rank u32, nranks u32
//   client -> server  round: length u32 (<= kMaxBlobBytes), bytes
//   server -> client  frame: kind u32, zero u32, length u64, payload
//       Ok     (after hello, once all ranks joined): empty payload
//       Error  (refused hello, or a rank died):      message, <= kMaxErrorBytes
//       Gather (a completed round): nranks x {length u32, bytes}, in rank order
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/wire.h"

namespace loom::rendezvous {

inline constexpr char kHelloMagic[8] = {'L', 'O', 'O', 'M', 'B', 'S', '0', '1'};
inline constexpr size_t kHelloBytes = 32;
inline constexpr size_t kFrameHeaderBytes = 16;
inline constexpr uint32_t kMaxBlobBytes = 1u << 20;
inline constexpr size_t kMaxErrorBytes = 4096;
inline constexpr int kMaxRanks = 1 << 16;

enum class FrameKind : uint32_t { Ok = 1, Error = 2, Gather = 3 };

struct Hello {
  std::array<uint8_t, 16> secret{};
  uint32_t rank = 0;
  uint32_t nranks = 0;
};

inline void encodeHello(const Hello& hello, uint8_t* out) {
  std::memcpy(out, kHelloMagic, 8);
  std::memcpy(out + 8, hello.secret.data(), 16);
  wire::putU32(out + 24, hello.rank);
  wire::putU32(out + 28, hello.nranks);
}

/// False when the magic is wrong (not a Loom client).
inline bool decodeHello(const uint8_t* in, Hello* hello) {
  if (std::memcmp(in, kHelloMagic, 8) != 0) return false;
  std::memcpy(hello->secret.data(), in + 8, 16);
  hello->rank = wire::getU32(in + 24);
  hello->nranks = wire::getU32(in + 28);
  return true;
}

inline std::string frameHeader(FrameKind kind, uint64_t length) {
  std::string header(kFrameHeaderBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(header.data());
  wire::putU32(p, static_cast<uint32_t>(kind));
  wire::putU64(p + 8, length);
  return header;
}

inline std::string frame(FrameKind kind, const std::string& payload) {
  return frameHeader(kind, payload.size()) + payload;
}

/// Constant-time comparison, so timing reveals nothing about the secret.
inline bool sameSecret(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace loom::rendezvous
