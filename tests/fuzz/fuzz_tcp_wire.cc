// Fuzzes the tcp transport's handshake decoders (transports/tcp/tcp_wire.h):
// a decode that succeeds must re-encode to exactly the bytes it read, so no
// two different byte strings mean the same handshake and nothing is ignored.
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
