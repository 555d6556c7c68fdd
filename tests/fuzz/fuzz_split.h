// Feeds a byte stream to an incremental parser in pieces whose sizes come from
// a seed, so one fuzz input also tests every way the network may split it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::fuzz {

/// Deterministic piece sizes in [1, 64] (xorshift): small pieces cut headers
/// and payloads at every offset.
class Splitter {
 public:
  explicit Splitter(uint32_t seed) : state_(seed | 1) {}
  size_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return 1 + state_ % 64;
  }

 private:
  uint32_t state_;
};

}  // namespace loom::fuzz
