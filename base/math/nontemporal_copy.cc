#include "math/nontemporal_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace loom {

void copyNonTemporal(void* dst, const void* src, size_t bytes) {
  streamNonTemporal(dst, src, bytes);
  // Streaming stores are weakly ordered: a peer told "done" after this must
  // see them.
  fenceNonTemporal();
}

void fenceNonTemporal() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

void streamNonTemporal(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;  // the pointers may be null then
#if defined(__x86_64__)
  auto* to = static_cast<char*>(dst);
  const auto* from = static_cast<const char*>(src);
  // Streaming stores need a 16-byte aligned destination: the head up to it
  // goes through plain stores.
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(to) % 16) % 16);
  std::memcpy(to, from, head);
  to += head;
  from += head;
  bytes -= head;
  const size_t body = bytes / 64 * 64;
  for (size_t i = 0; i < body; i += 64) {
    const auto* s = reinterpret_cast<const __m128i*>(from + i);
    auto* d = reinterpret_cast<__m128i*>(to + i);
    const __m128i a = _mm_loadu_si128(s);
    const __m128i b = _mm_loadu_si128(s + 1);
    const __m128i c = _mm_loadu_si128(s + 2);
    const __m128i e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  std::memcpy(to + body, from + body, bytes - body);
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace loom
