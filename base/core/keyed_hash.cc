// libsodium rather than OpenSSL: its SHA-256 and HMAC are plain computation
// with no global state or locks, so they stay safe in a child forked while
// another thread was hashing (OpenSSL 3 fetches algorithms under a global
// lock, which such a child inherits locked). These functions need no
// sodium_init(): it only selects implementations of other primitives.
#include "core/keyed_hash.h"

#include <sodium.h>
#include <sys/random.h>

#include <cerrno>

#include "core/error.h"

namespace loom {

Digest sha256(std::string_view label, std::span<const uint8_t> data) {
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  crypto_hash_sha256_update(&state, reinterpret_cast<const unsigned char*>(label.data()),
                            label.size());
  crypto_hash_sha256_update(&state, data.data(), data.size());
  Digest out{};
  static_assert(sizeof(out) == crypto_hash_sha256_BYTES);
  crypto_hash_sha256_final(&state, out.data());
  return out;
}

Digest hmacSha256(std::span<const uint8_t> key, std::string_view label,
                  std::initializer_list<std::span<const uint8_t>> message) {
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, key.data(), key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(label.data()),
                                label.size());
  for (const auto& part : message) crypto_auth_hmacsha256_update(&state, part.data(), part.size());
  Digest out{};
  static_assert(sizeof(out) == crypto_auth_hmacsha256_BYTES);
  crypto_auth_hmacsha256_final(&state, out.data());
  return out;
}

bool sameBytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

void randomBytes(std::span<uint8_t> out) {
  size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t n = getrandom(out.data() + filled, out.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      raiseErrno("getrandom");
    }
    filled += static_cast<size_t>(n);
  }
}

}  // namespace loom
