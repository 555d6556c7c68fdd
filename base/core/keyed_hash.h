// Cryptographic primitives for the handshakes (libsodium): SHA-256,
// HMAC-SHA256, a constant-time comparison and random bytes from the kernel.
// Handshakes prove they know a secret by MACing a fresh challenge; the secret
// itself never crosses the network. See docs/security.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace loom {

using Digest = std::array<uint8_t, 32>;

/// SHA-256 of `label` followed by `data` (the label keeps derivations apart).
Digest sha256(std::string_view label, std::span<const uint8_t> data);

/// HMAC-SHA256 with `key` over `label` followed by every part of `message`,
/// in order, as if concatenated.
Digest hmacSha256(std::span<const uint8_t> key, std::string_view label,
                  std::initializer_list<std::span<const uint8_t>> message);

/// The bytes of `text`, for hashing it.
inline std::span<const uint8_t> bytesOf(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

/// Equal contents, in time that does not depend on where they differ.
bool sameBytes(std::span<const uint8_t> a, std::span<const uint8_t> b);

/// Fills `out` from getrandom (the kernel's CSPRNG). Throws SystemError.
void randomBytes(std::span<uint8_t> out);

template <size_t N>
std::array<uint8_t, N> randomArray() {
  std::array<uint8_t, N> bytes{};
  randomBytes(bytes);
  return bytes;
}

}  // namespace loom
