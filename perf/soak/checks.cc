// Runner's element-level helpers: filling inputs and comparing outputs byte
// for byte with the encoded exact result (all values are exact, so equality
// is the right test even for fp16 and bf16). The loops are templated on the
// element size so that each element costs a hash or two and no calls.
#include <cstdio>
#include <cstring>

#include "runner.h"
#include "types.h"

namespace soak {

namespace {

constexpr unsigned char kCanary = 0xA5;

template <size_t ES, typename Bits>
void fillSized(char* dst, size_t n, const Bits& bits) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t b = bits(i);
    std::memcpy(dst + i * ES, &b, ES);  // little-endian: the low bytes
  }
}

// Calls bad(i) for every element that differs from bits(i).
template <size_t ES, typename Bits, typename Bad>
void compareSized(const char* got, size_t n, const Bits& bits, const Bad& bad) {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t want = bits(i);
    if (std::memcmp(&want, got + i * ES, ES) != 0) bad(i, want);
  }
}

template <typename Bits>
void fill(size_t es, char* dst, size_t n, const Bits& bits) {
  switch (es) {
    case 1:
      return fillSized<1>(dst, n, bits);
    case 2:
      return fillSized<2>(dst, n, bits);
    case 4:
      return fillSized<4>(dst, n, bits);
    default:
      return fillSized<8>(dst, n, bits);
  }
}

template <typename Bits, typename Bad>
void compare(size_t es, const char* got, size_t n, const Bits& bits, const Bad& bad) {
  switch (es) {
    case 1:
      return compareSized<1>(got, n, bits, bad);
    case 2:
      return compareSized<2>(got, n, bits, bad);
    case 4:
      return compareSized<4>(got, n, bits, bad);
    default:
      return compareSized<8>(got, n, bits, bad);
  }
}

}  // namespace

void Runner::fillReduction(const ReductionInputs& in, char* dst, uint64_t first, size_t n) const {
  const loomDataType_t t = in.type();
  fill(loomTypeSize(t), dst, n, [&](size_t i) { return encoded(t, in.value(rank_, first + i)); });
}

void Runner::fillCopy(const Call& call, int src, char* dst, uint64_t first, size_t n) const {
  const uint64_t key = rankKey(call.seed, static_cast<uint64_t>(src));
  fill(loomTypeSize(call.type), dst, n, [&](size_t i) { return elementHash(key, first + i); });
}

void Runner::note(const char* what, size_t index, double expected, double got) {
  if (bad_.wrong++ > 0) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s[%zu]", what, index);
  bad_.where = buf;
  bad_.expected = expected;
  bad_.got = got;
}

void Runner::checkReduction(const ReductionInputs& in, const char* got, uint64_t first, size_t n,
                            const char* what) {
  const loomDataType_t t = in.type();
  const size_t es = loomTypeSize(t);
  compare(
      es, got, n, [&](size_t i) { return encoded(t, in.expected(first + i)); },
      [&](size_t i, uint64_t want) {
        note(what, i, decodeValue(t, &want), decodeValue(t, got + i * es));
      });
}

void Runner::checkOwnInput(const ReductionInputs& in, const char* got, uint64_t first, size_t n,
                           const char* what) {
  const loomDataType_t t = in.type();
  const size_t es = loomTypeSize(t);
  compare(
      es, got, n, [&](size_t i) { return encoded(t, in.value(rank_, first + i)); },
      [&](size_t i, uint64_t want) {
        note(what, i, decodeValue(t, &want), decodeValue(t, got + i * es));
      });
}

void Runner::checkCopy(const Call& call, int src, const char* got, uint64_t first, size_t n,
                       const char* what) {
  const size_t es = loomTypeSize(call.type);
  const uint64_t key = rankKey(call.seed, static_cast<uint64_t>(src));
  compare(
      es, got, n, [&](size_t i) { return elementHash(key, first + i); },
      [&](size_t i, uint64_t want) {
        // Print the raw bits: copied values may be NaN patterns.
        uint64_t g = 0;
        std::memcpy(&g, got + i * es, es);
        const uint64_t mask = es == 8 ? ~0ULL : (1ULL << (8 * es)) - 1;
        note(what, i, static_cast<double>(want & mask), static_cast<double>(g));
      });
}

void Runner::checkCanary(const char* p, size_t bytes, const char* what) {
  for (size_t i = 0; i < bytes; ++i) {
    if (static_cast<unsigned char>(p[i]) != kCanary) {
      note(what, i, kCanary, static_cast<unsigned char>(p[i]));
    }
  }
}

}  // namespace soak
