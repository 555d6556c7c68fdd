// The 16-byte bootstrap secret: random for loomGetUniqueId, or derived from a
// text every rank knows (job key, LOOM_SECRET) when no id can be shipped.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace loom {

/// 16 bytes from getrandom (the kernel's CSPRNG).
std::array<uint8_t, 16> randomSecret();
/// The same 16 bytes on every rank for the same `text`. Not secret against
/// anyone who knows the text: it only keeps concurrent jobs apart.
std::array<uint8_t, 16> derivedSecret(const std::string& text);

}  // namespace loom
