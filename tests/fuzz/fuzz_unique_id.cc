// Fuzzes the 128-byte unique id and its hex form: whatever arrives through
// LOOM_UNIQUE_ID or loomCommInitRank either parses to an id that serializes
// back to the very same bytes, or is refused with InvalidArgument.
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/unique_id.h"
#include "core/error.h"
#include "core/wire.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using loom::UniqueId;

void checkRefusal(const loom::Error& e) {
  FUZZ_CHECK(e.code() == loom::ErrorCode::InvalidArgument);
  FUZZ_CHECK(std::string(e.what()).rfind("malformed unique id: ", 0) == 0);
}

void checkRaw(const loomUniqueId& raw) {
  UniqueId id;
  try {
    id = UniqueId::deserialize(raw);
  } catch (const loom::Error& e) {
    checkRefusal(e);
    return;
  }
  // Canonical: everything deserialize accepts, serialize writes back as is.
  const loomUniqueId again = id.serialize();
  FUZZ_CHECK(std::memcmp(again.internal, raw.internal, LOOM_UNIQUE_ID_BYTES) == 0);
  FUZZ_CHECK(id.port != 0);
  const UniqueId viaHex = UniqueId::fromHex(id.toHex());
  FUZZ_CHECK(viaHex.host == id.host && viaHex.port == id.port && viaHex.secret == id.secret &&
             viaHex.job == id.job);
  FUZZ_CHECK(viaHex.tag() == id.tag());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == LOOM_UNIQUE_ID_BYTES) {
    loomUniqueId raw;
    std::memcpy(raw.internal, data, size);
    checkRaw(raw);
    // Random bytes almost never carry a valid checksum; fix it up so the
    // checks behind it (version, family, reserved bytes, port) get explored.
    uint8_t fixed[LOOM_UNIQUE_ID_BYTES];
    std::memcpy(fixed, data, size);
    loom::wire::putU64(fixed + 120, loom::wire::fnv1a(fixed, 120));
    std::memcpy(raw.internal, fixed, size);
    checkRaw(raw);
  }
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const UniqueId id = UniqueId::fromHex(text);
    // Accepted hex is the id's own hex, up to the case of the digits.
    std::string lower = text;
    for (char& c : lower) {
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    }
    FUZZ_CHECK(id.toHex() == lower);
  } catch (const loom::Error& e) {
    checkRefusal(e);
  }
  return 0;
}
