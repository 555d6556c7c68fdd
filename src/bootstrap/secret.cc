#include "bootstrap/secret.h"

#include <algorithm>

#include "core/keyed_hash.h"
#include "core/wire.h"

namespace loom {

std::array<uint8_t, 16> randomSecret() { return randomArray<16>(); }

std::array<uint8_t, 16> derivedSecret(const std::string& text) {
  const Digest digest = sha256("loom bootstrap secret", bytesOf(text));
  std::array<uint8_t, 16> secret{};
  std::copy_n(digest.begin(), secret.size(), secret.begin());
  return secret;
}

uint64_t randomJob() { return wire::getU64(randomArray<8>().data()); }

uint64_t derivedJob(const std::string& jobKey) {
  return wire::getU64(sha256("loom job", bytesOf(jobKey)).data());
}

std::array<uint8_t, 16> childSecret(const std::array<uint8_t, 16>& parent, std::string_view label,
                                    std::span<const uint8_t> salt) {
  const Digest digest = hmacSha256(parent, label, {salt});
  std::array<uint8_t, 16> secret{};
  std::copy_n(digest.begin(), secret.size(), secret.begin());
  return secret;
}

uint64_t childJob(const std::array<uint8_t, 16>& parent, std::string_view label,
                  std::span<const uint8_t> salt) {
  return wire::getU64(hmacSha256(parent, label, {salt}).data());
}

}  // namespace loom
