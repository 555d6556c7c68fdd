// Fuzzes the tcp transport's handshake decoders (transports/tcp/tcp_wire.h):
// a decode that succeeds must re-encode to exactly the bytes it read, so no
// two different byte strings mean the same handshake and nothing is ignored;
// and the hello's MAC must cover the fields it claims to.
#include <cstdint>
#include <cstring>

#include "tests/fuzz/fuzz_check.h"
#include "transports/tcp/tcp_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using loom::tcp::Ack;
  using loom::tcp::Hello;
  if (size >= Hello::kBytes) {
    Hello hello;
    if (hello.decode(data)) {
      uint8_t again[Hello::kBytes];
      hello.encode(again);
      FUZZ_CHECK(std::memcmp(again, data, Hello::kBytes) == 0);
      // The MAC covers every field: a signed hello verifies, and changing the
      // rank or the nonce after signing breaks it.
      const loom::Digest key = loom::sha256("fuzz key", {});
      hello.mac = hello.expectedMac(key, 1, "10.0.0.1:4000");
      FUZZ_CHECK(loom::sameBytes(hello.mac, hello.expectedMac(key, 1, "10.0.0.1:4000")));
      FUZZ_CHECK(!loom::sameBytes(hello.mac, hello.expectedMac(key, 2, "10.0.0.1:4000")));
      FUZZ_CHECK(!loom::sameBytes(hello.mac, hello.expectedMac(key, 1, "10.0.0.1:4001")));
      Hello forged = hello;
      forged.rank ^= 1;
      FUZZ_CHECK(!loom::sameBytes(forged.mac, forged.expectedMac(key, 1, "10.0.0.1:4000")));
      forged = hello;
      forged.nonce[data[size - 1] % loom::tcp::kNonceBytes] ^= 0x80;
      FUZZ_CHECK(!loom::sameBytes(forged.mac, forged.expectedMac(key, 1, "10.0.0.1:4000")));
    } else {
      FUZZ_CHECK(std::memcmp(data, Hello::kMagic, 8) != 0);
    }
  }
  if (size >= Ack::kBytes) {
    Ack ack;
    if (ack.decode(data)) {
      uint8_t again[Ack::kBytes];
      ack.encode(again);
      FUZZ_CHECK(std::memcmp(again, data, Ack::kBytes) == 0);
    }
  }
  // The two handshakes can never be mistaken for one another.
  if (size >= Hello::kBytes) {
    Hello hello;
    Ack ack;
    FUZZ_CHECK(!(hello.decode(data) && ack.decode(data)));
  }
  return 0;
}
