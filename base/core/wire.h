// Little-endian byte helpers and FNV-1a hashing for Loom's wire formats
// (unique id, rendezvous protocol, tcp handshake and headers). Explicit byte order keeps the
// formats the same on every host, whatever its endianness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loom::wire {

inline void putU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t getU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// FNV-1a, 64 bit. Every single-byte change of the input changes the hash
/// (each step is a bijection of the state), which is what checksums need here.
inline uint64_t fnv1a(const void* data, size_t size, uint64_t hash = 0xcbf29ce484222325ULL) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}
inline uint64_t fnv1a(std::string_view text, uint64_t hash = 0xcbf29ce484222325ULL) {
  return fnv1a(text.data(), text.size(), hash);
}

}  // namespace loom::wire
