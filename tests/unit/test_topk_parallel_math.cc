// The device top-k's math on the host (compression/cuda/topk_kernels.cu runs
// it in parallel; no GPU needed here): a radix select that picks each digit by
// the "running count reaches need" rule over bins taken from the top, then
// tiles of 256 "threads" x 8 elements that count above/equal the threshold,
// an exclusive scan of those counts, and topkEntry placing each kept element.
// The encoding built that way must equal TopkCodec's byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compression/codec.h"
#include "compression/codec_math.h"
#include "compression/topk_codec.h"
#include "compression/topk_math.h"

namespace loom {
namespace {

using namespace codec;

constexpr size_t kThreadItems = 8;
constexpr size_t kTileThreads = 256;
constexpr size_t kTile = kThreadItems * kTileThreads;

struct Threshold {
  uint32_t mag;
  uint32_t take;
};

/// The kernels' selection: per pass, a histogram of the elements matching the
/// prefix, then the bin (from the top) where `need` falls.
Threshold parallelStyleSelect(const std::vector<float>& x, uint32_t k) {
  if (k == x.size()) return {0, k};  // the kernels' initial state
  uint32_t prefix = 0, mask = 0, need = k;
  for (int pass = 0; pass < kTopkPasses; ++pass) {
    std::vector<uint32_t> hist(topkBins(pass), 0);
    for (float v : x) {
      const uint32_t m = magnitudeBits(v);
      if ((m & mask) == prefix) ++hist[topkDigit(m, pass)];
    }
    uint32_t above = 0;
    int chosen = -1;
    for (uint32_t position = 0; position < hist.size(); ++position) {
      const uint32_t bin = topkBins(pass) - 1 - position;
      if (above < need && need <= above + hist[bin]) {
        EXPECT_EQ(chosen, -1) << "two bins matched";
        chosen = static_cast<int>(bin);
        prefix |= bin << topkDigitShift(pass);
        mask = topkPrefixMask(pass);
        need -= above;
      }
      above += hist[bin];
    }
    EXPECT_NE(chosen, -1) << "no bin matched in pass " << pass;
  }
  return {prefix, need};
}

std::vector<uint8_t> parallelStyleEncode(const std::vector<float>& x, double ratio) {
  const auto k = static_cast<uint32_t>(topkKeptCount(x.size(), ratio));
  const Threshold t = parallelStyleSelect(x, k);
  const size_t n = x.size();
  const size_t threads = (n + kThreadItems - 1) / kThreadItems;
  // Per-thread counts, then one exclusive scan over all of them: the same
  // numbers as a scan of per-tile totals plus a block scan inside each tile.
  std::vector<uint64_t> before(threads + 1, 0);
  for (size_t th = 0; th < threads; ++th) {
    uint64_t c = 0;
    for (size_t i = th * kThreadItems; i < n && i < (th + 1) * kThreadItems; ++i) {
      c += topkClassify(magnitudeBits(x[i]), t.mag);
    }
    before[th + 1] = before[th] + c;
  }
  std::vector<uint8_t> out(4 + 8 * size_t{k});
  std::memcpy(out.data(), &k, 4);
  // Threads in a scrambled order: each writes only its own entries.
  std::vector<size_t> order(threads);
  for (size_t th = 0; th < threads; ++th) order[th] = (th * 7919) % threads;
  std::vector<bool> done(threads, false);
  for (size_t th : order) {
    if (done[th]) continue;
    done[th] = true;
    auto above = static_cast<uint32_t>(before[th] >> 32);
    auto equal = static_cast<uint32_t>(before[th]);
    for (size_t i = th * kThreadItems; i < n && i < (th + 1) * kThreadItems; ++i) {
      uint32_t entry = 0;
      if (topkEntry(magnitudeBits(x[i]), t.mag, t.take, above, equal, entry)) {
        EXPECT_LT(entry, k);
        const auto index = static_cast<uint32_t>(i);
        std::memcpy(out.data() + 4 + 4 * size_t{entry}, &index, 4);
        std::memcpy(out.data() + 4 + 4 * size_t{k} + 4 * size_t{entry}, &x[i], 4);
      }
    }
  }
  for (size_t th = 0; th < threads; ++th) {
    if (!done[th]) ADD_FAILURE() << "thread " << th << " never ran";
  }
  return out;
}

std::vector<uint8_t> hostEncode(const std::vector<float>& x, double ratio) {
  CodecConfig c;
  c.kind = CodecKind::Topk;
  c.ratio = ratio;
  const TopkCodec codec(c);
  std::vector<uint8_t> bytes(codec.encodedBytes(x.size()));
  codec.encode(x.data(), DataType::Float32, x.size(), bytes.data(), bytes.size(), {});
  return bytes;
}

std::vector<float> normalWithSpecials(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  for (size_t i = 0; i < n && i < 8; ++i) x[i] = 1e-40f * static_cast<float>(i);
  if (n > 9) x[9] = std::numeric_limits<float>::infinity();
  if (n > 17) x[17] = -std::numeric_limits<float>::quiet_NaN();
  return x;
}

std::vector<float> heavyTies(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 7919) % 5) * ((i % 3) == 0 ? -1.0f : 1.0f);
  }
  return x;
}

TEST(TopkParallelMath, TiledSelectionEqualsTheHostCodec) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{1001}, kTile, 3 * kTile + 17, size_t{100003}}) {
    for (double ratio : {1e-6, 0.01, 0.3, 0.5, 1.0}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " ratio=" << ratio);
      const auto normal = normalWithSpecials(n, static_cast<uint32_t>(n));
      EXPECT_EQ(parallelStyleEncode(normal, ratio), hostEncode(normal, ratio));
      const auto tied = heavyTies(n);
      EXPECT_EQ(parallelStyleEncode(tied, ratio), hostEncode(tied, ratio));
    }
  }
}

TEST(TopkParallelMath, ClassifyPacksAboveHighAndEqualLow) {
  EXPECT_EQ(topkClassify(5, 4), uint64_t{1} << 32);
  EXPECT_EQ(topkClassify(4, 4), 1u);
  EXPECT_EQ(topkClassify(3, 4), 0u);
}

TEST(TopkParallelMath, EntryTakesEqualsByIndexUpToTake) {
  uint32_t above = 0, equal = 0, entry = 99;
  // Threshold 10, take 1: [12, 10, 10, 11] -> kept 12 (entry 0), first 10 (1), 11 (2).
  EXPECT_TRUE(topkEntry(12, 10, 1, above, equal, entry));
  EXPECT_EQ(entry, 0u);
  EXPECT_TRUE(topkEntry(10, 10, 1, above, equal, entry));
  EXPECT_EQ(entry, 1u);
  EXPECT_FALSE(topkEntry(10, 10, 1, above, equal, entry));
  EXPECT_TRUE(topkEntry(11, 10, 1, above, equal, entry));
  EXPECT_EQ(entry, 2u);
  EXPECT_FALSE(topkEntry(3, 10, 1, above, equal, entry));
  EXPECT_EQ(above, 2u);
  EXPECT_EQ(equal, 2u);
}

}  // namespace
}  // namespace loom
