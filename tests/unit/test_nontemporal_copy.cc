// copyNonTemporal against the bytes it was given, at every alignment of both
// ends and at sizes around its 16-byte head and 64-byte blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "math/nontemporal_copy.h"

namespace loom {
namespace {

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

TEST(NonTemporalCopy, CopiesEveryByteAtEveryAlignment) {
  constexpr size_t kGuard = 80;
  for (size_t bytes : {0, 1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4099}) {
    for (size_t dstShift = 0; dstShift < 17; ++dstShift) {
      for (size_t srcShift : {0, 1, 8, 15}) {
        const auto src = pattern(bytes + srcShift, static_cast<uint32_t>(bytes));
        auto dst = pattern(bytes + dstShift + kGuard, 7);
        const auto before = dst;
        copyNonTemporal(dst.data() + dstShift, src.data() + srcShift, bytes);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= dstShift && i < dstShift + bytes;
          const uint8_t want = inside ? src[i - dstShift + srcShift] : before[i];
          ASSERT_EQ(dst[i], want) << "byte " << i << " of a " << bytes << "-byte copy, dst +"
                                  << dstShift << ", src +" << srcShift;
        }
      }
    }
  }
}

TEST(NonTemporalCopy, CopiesALargeBufferWhole) {
  const size_t bytes = (size_t{10} << 20) + 37;  // past any cache level, odd tail
  const auto src = pattern(bytes, 99);
  std::vector<uint8_t> dst(bytes + 3, 0xA5);
  copyNonTemporal(dst.data() + 3, src.data(), bytes);
  EXPECT_EQ(dst[0], 0xA5);
  EXPECT_EQ(dst[2], 0xA5);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 3));
}

TEST(NonTemporalCopy, UnfencedBlocksThenOneFenceCopyTheWhole) {
  // As reduceStreamed uses them: 4 KiB blocks out of one buffer, odd tail,
  // a destination off 16-byte alignment, one fence at the end.
  const size_t bytes = 3 * 4096 + 1001;
  const auto src = pattern(bytes, 5);
  std::vector<uint8_t> dst(bytes + 5, 0x3C);
  for (size_t first = 0; first < bytes; first += 4096) {
    streamNonTemporal(dst.data() + 5 + first, src.data() + first,
                      std::min<size_t>(4096, bytes - first));
  }
  fenceNonTemporal();
  EXPECT_EQ(dst[4], 0x3C);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 5));
}

}  // namespace
}  // namespace loom
