// Fuzzes the ibverbs transport's connection records (transports/ibverbs/
// ibv_connection.h), which every rank decodes from what its peers publish.
// An accepted record re-encodes to exactly the bytes read (every byte means
// something, so no two spellings of one record exist) and satisfies the
// limits the link relies on; a refusal is RemoteError. The input is decoded
// both as one record and as a bundle of records.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "tests/fuzz/fuzz_check.h"
#include "transports/ibverbs/ibv_connection.h"

namespace {

void checkLimits(const loom::IbvConnection& c) {
  FUZZ_CHECK(c.qpNum < (1u << 24) && c.psn < (1u << 24));
  FUZZ_CHECK(c.mtu >= 1 && c.mtu <= 5 && c.port >= 1);
  FUZZ_CHECK(c.slots >= 1 && c.slots <= loom::IbvConnection::kMaxSlots);
  FUZZ_CHECK(c.slotBytes >= 1 && c.slotBytes <= loom::IbvConnection::kMaxSlotBytes);
  FUZZ_CHECK(c.ringAddress != 0 && c.ringAddress + c.slots * c.slotBytes >= c.ringAddress);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const loom::IbvConnection c = loom::IbvConnection::decode(bytes);
    FUZZ_CHECK(size == loom::IbvConnection::kBytes);
    FUZZ_CHECK(c.encode() == bytes);
    checkLimits(c);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
  }
  try {
    const auto records = loom::decodeIbvConnections(bytes);
    FUZZ_CHECK(records.size() * loom::IbvConnection::kBytes == size);
    FUZZ_CHECK(loom::encodeIbvConnections(records) == bytes);
    for (const auto& c : records) checkLimits(c);
  } catch (const loom::Error& e) {
    FUZZ_CHECK(e.code() == loom::ErrorCode::RemoteError);
  }
  return 0;
}
