#include "core/keyed_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/random.h>

#include <cerrno>
#include <memory>

#include "core/error.h"

namespace loom {
namespace {

const uint8_t* bytesOf(std::string_view text) {
  return reinterpret_cast<const uint8_t*>(text.data());
}

}  // namespace

Digest sha256(std::string_view label, std::span<const uint8_t> data) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  Digest out{};
  unsigned length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), label.data(), label.size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &length) != 1 || length != out.size()) {
    raise(ErrorCode::SystemError, "SHA-256 failed in libcrypto");
  }
  return out;
}

Digest hmacSha256(std::span<const uint8_t> key, std::string_view label,
                  std::initializer_list<std::span<const uint8_t>> message) {
  // HMAC_CTX is deprecated in OpenSSL 3; EVP_MAC is its replacement.
  std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr),
                                                        &EVP_MAC_free);
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(
      mac ? EVP_MAC_CTX_new(mac.get()) : nullptr, &EVP_MAC_CTX_free);
  char digestName[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string("digest", digestName, 0),
      OSSL_PARAM_construct_end(),
  };
  bool ok = ctx && EVP_MAC_init(ctx.get(), key.data(), key.size(), params) == 1 &&
            EVP_MAC_update(ctx.get(), bytesOf(label), label.size()) == 1;
  for (const auto& part : message)
    ok = ok && EVP_MAC_update(ctx.get(), part.data(), part.size()) == 1;
  Digest out{};
  size_t length = 0;
  if (!ok || EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) != 1 ||
      length != out.size()) {
    raise(ErrorCode::SystemError, "HMAC-SHA256 failed in libcrypto");
  }
  return out;
}

bool sameBytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
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
