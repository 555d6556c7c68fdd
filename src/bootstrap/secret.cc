#include "bootstrap/secret.h"

#include <sys/random.h>

#include <cerrno>

#include "core/error.h"
#include "core/wire.h"

namespace loom {

std::array<uint8_t, 16> randomSecret() {
  std::array<uint8_t, 16> secret{};
  size_t filled = 0;
  while (filled < secret.size()) {
    const ssize_t n = getrandom(secret.data() + filled, secret.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      raiseErrno("getrandom for the bootstrap secret");
    }
    filled += static_cast<size_t>(n);
  }
  return secret;
}

std::array<uint8_t, 16> derivedSecret(const std::string& text) {
  // Two differently seeded 64-bit hashes fill the 16 bytes.
  std::array<uint8_t, 16> secret{};
  wire::putU64(secret.data(), wire::fnv1a(text, wire::fnv1a("loom-secret-a")));
  wire::putU64(secret.data() + 8, wire::fnv1a(text, wire::fnv1a("loom-secret-b")));
  return secret;
}

}  // namespace loom
