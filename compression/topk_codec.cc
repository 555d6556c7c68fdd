#include "compression/topk_codec.h"

#include <cstring>
#include <limits>

#include "compression/element_io.h"
#include "compression/topk_math.h"

namespace loom {

using namespace codec;

namespace {

constexpr size_t kHeaderBytes = sizeof(uint32_t);
constexpr size_t kEntryBytes = sizeof(uint32_t) + sizeof(float);

/// The k-th largest magnitude (as bits) and how many elements of exactly that
/// magnitude belong to the top k; the lowest-index ones are taken.
struct Threshold {
  uint32_t mag;
  size_t takeEqual;
};

// Radix select, most significant digit first: after each pass the prefix of
// the k-th largest magnitude is one digit longer, and `need` is its rank among
// the elements that share the prefix. Three reads of the chunk, no scratch.
template <typename Load>
Threshold selectThreshold(Load load, size_t n, size_t k) {
  uint32_t prefix = 0;
  uint32_t prefixMask = 0;
  size_t need = k;
  uint32_t hist[kTopkMaxBins];
  for (int pass = 0; pass < kTopkPasses; ++pass) {
    const uint32_t bins = topkBins(pass);
    std::memset(hist, 0, bins * sizeof hist[0]);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t m = magnitudeBits(load(i));
      if ((m & prefixMask) == prefix) ++hist[topkDigit(m, pass)];
    }
    uint32_t digit = bins - 1;
    while (hist[digit] < need) need -= hist[digit--];  // terminates: the counts sum to >= need
    prefix |= digit << topkDigitShift(pass);
    prefixMask = topkPrefixMask(pass);
  }
  return {prefix, need};
}

template <typename T>
void put(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

template <typename T>
T get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

size_t TopkCodec::keptCount(size_t n) const { return topkKeptCount(n, config().ratio); }

size_t TopkCodec::encodedBytes(size_t n) const { return kHeaderBytes + keptCount(n) * kEntryBytes; }

size_t TopkCodec::encodeImpl(const void* src, DataType type, size_t n, void* dst,
                             const EncodeContext&) const {
  if (n > std::numeric_limits<uint32_t>::max()) {
    raise(ErrorCode::InvalidArgument, "codec topk: {} elements exceed 32-bit indices", n);
  }
  const size_t k = keptCount(n);
  const size_t bytes = kHeaderBytes + k * kEntryBytes;
  auto* out = static_cast<unsigned char*>(dst);
  unsigned char* indices = out + kHeaderBytes;
  unsigned char* values = indices + k * sizeof(uint32_t);
  put(out, static_cast<uint32_t>(k));
  withLoader(src, type, [&](auto load) {
    // k == n keeps everything; skipping the select also covers n == 0.
    Threshold t = k == n ? Threshold{0, n} : selectThreshold(load, n, k);
    size_t c = 0;
    for (size_t i = 0; i < n && c < k; ++i) {
      const float v = load(i);
      const uint32_t m = magnitudeBits(v);
      if (m > t.mag || (m == t.mag && t.takeEqual > 0)) {
        if (m == t.mag) --t.takeEqual;
        put(indices + c * sizeof(uint32_t), static_cast<uint32_t>(i));
        put(values + c * sizeof(float), v);
        ++c;
      }
    }
  });
  return bytes;
}

size_t TopkCodec::checkedCount(const void* src, size_t srcBytes, size_t n) const {
  if (srcBytes < kHeaderBytes) {
    raise(ErrorCode::InvalidArgument, "codec topk: {} bytes hold no header", srcBytes);
  }
  const size_t count = get<uint32_t>(static_cast<const unsigned char*>(src));
  if (count > n || srcBytes != kHeaderBytes + count * kEntryBytes) {
    raise(ErrorCode::InvalidArgument,
          "codec topk: {} bytes with count {} are not an encoding of {} elements", srcBytes, count,
          n);
  }
  return count;
}

namespace {

// Walks the entries, checking each index (the bytes may come from another
// process): strictly ascending, hence distinct, and below n.
template <typename Fn>
void forEachEntry(const void* src, size_t count, size_t n, Fn&& fn) {
  const auto* indices = static_cast<const unsigned char*>(src) + kHeaderBytes;
  const unsigned char* values = indices + count * sizeof(uint32_t);
  size_t next = 0;  // smallest index allowed next
  for (size_t j = 0; j < count; ++j) {
    const size_t idx = get<uint32_t>(indices + j * sizeof(uint32_t));
    if (idx < next || idx >= n) {
      raise(ErrorCode::InvalidArgument,
            "codec topk: entry {} has index {}, not ascending or not below {}", j, idx, n);
    }
    fn(idx, get<float>(values + j * sizeof(float)));
    next = idx + 1;
  }
}

}  // namespace

void TopkCodec::decode(const void* src, size_t srcBytes, size_t n, DataType type, void* out) const {
  const size_t count = checkedCount(src, srcBytes, n);
  withStorer(out, type, [&](auto store) {
    for (size_t i = 0; i < n; ++i) store(i, 0.0f);
    forEachEntry(src, count, n, [&](size_t i, float v) { store(i, v); });
  });
}

void TopkCodec::decodeAccumulate(const void* src, size_t srcBytes, size_t n, float* acc) const {
  const size_t count = checkedCount(src, srcBytes, n);
  forEachEntry(src, count, n, [&](size_t i, float v) { acc[i] = addRn(acc[i], v); });
}

}  // namespace loom
