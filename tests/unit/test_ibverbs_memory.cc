#if LOOM_HAVE_IBVERBS
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/error.h"
#include "transports/ibverbs/ibv_memory.h"

namespace loom {
namespace {

constexpr size_t kPage = 4096;

// Stands in for ibv_reg_mr/ibv_dereg_mr: records every call and hands out
// distinct keys, so tests see exactly what the registry asked of the NIC.
struct Recorder {
  struct Call {
    uintptr_t begin;
    size_t length;
  };
  std::vector<Call> registered;
  std::vector<Call> deregistered;
  uint32_t nextKey = 1;
  bool failNext = false;

  IbvMemoryRegistry make(size_t maxUnusedBytes = 64 * kPage) {
    return IbvMemoryRegistry(
        [this](uintptr_t begin, size_t length) {
          if (failNext) {
            failNext = false;
            throw Error(ErrorCode::SystemError, "fake ibv_reg_mr failed");
          }
          registered.push_back({begin, length});
          const uint32_t key = nextKey++;
          return IbvRegion{begin, length, key, key + 1000, nullptr};
        },
        [this](const IbvRegion& r) {
          deregistered.push_back({r.begin, r.length});
        },
        IbvMemoryRegistry::Options{kPage, maxUnusedBytes});
  }
  size_t live() const { return registered.size() - deregistered.size(); }
};

// Addresses are never dereferenced; page numbers keep the arithmetic readable.
const void* at(size_t page, size_t offset = 0) {
  return reinterpret_cast<const void*>(0x10000000 + page * kPage + offset);
}
uintptr_t addr(size_t page) { return reinterpret_cast<uintptr_t>(at(page)); }

TEST(IbvMemory, RegistersWholePages) {
  Recorder rec;
  auto reg = rec.make();
  const auto ref = reg.acquire(at(2, 100), 10);
  ASSERT_EQ(rec.registered.size(), 1u);
  EXPECT_EQ(rec.registered[0].begin, addr(2));
  EXPECT_EQ(rec.registered[0].length, kPage);
  EXPECT_EQ(ref.region.begin, addr(2));
  EXPECT_EQ(ref.region.lkey, 1u);
  EXPECT_EQ(ref.region.rkey, 1001u);
  // A range crossing a page boundary covers both pages.
  reg.acquire(at(10, kPage - 1), 2);
  EXPECT_EQ(rec.registered[1].begin, addr(10));
  EXPECT_EQ(rec.registered[1].length, 2 * kPage);
}

TEST(IbvMemory, ContainedRangesShareOneRegistration) {
  Recorder rec;
  auto reg = rec.make();
  const auto outer = reg.acquire(at(0), 8 * kPage);
  const auto inner = reg.acquire(at(3, 17), kPage);
  const auto samePage = reg.acquire(at(0, 5), 1);
  EXPECT_EQ(rec.registered.size(), 1u);
  EXPECT_EQ(inner.id, outer.id);
  EXPECT_EQ(samePage.region.lkey, outer.region.lkey);
  ASSERT_TRUE(reg.find(at(7), kPage).has_value());
  EXPECT_EQ(reg.find(at(7), kPage)->lkey, outer.region.lkey);
  EXPECT_FALSE(reg.find(at(7), kPage + 1).has_value());  // runs past the end
  EXPECT_FALSE(reg.find(at(8), 1).has_value());
}

TEST(IbvMemory, OverlapRegistersTheUnionAndRetiresTheOld) {
  Recorder rec;
  auto reg = rec.make();
  const auto a = reg.acquire(at(0), 4 * kPage);  // pages 0-3
  reg.release(a.id);                             // unused: cached
  const auto b = reg.acquire(at(2), 4 * kPage);  // pages 2-5 overlap it
  ASSERT_EQ(rec.registered.size(), 2u);
  EXPECT_EQ(rec.registered[1].begin, addr(0));
  EXPECT_EQ(rec.registered[1].length, 6 * kPage);
  // The unused old registration is gone at once.
  ASSERT_EQ(rec.deregistered.size(), 1u);
  EXPECT_EQ(rec.deregistered[0].length, 4 * kPage);
  EXPECT_EQ(reg.find(at(0), 6 * kPage)->lkey, b.region.lkey);
  EXPECT_EQ(reg.registrations(), 1u);
}

TEST(IbvMemory, RetiredRegistrationsInUseLiveUntilReleased) {
  Recorder rec;
  auto reg = rec.make();
  const auto a = reg.acquire(at(0), 2 * kPage);  // pages 0-1, in use
  const auto b = reg.acquire(at(1), 2 * kPage);  // pages 1-2
  EXPECT_EQ(rec.registered.size(), 2u);
  EXPECT_TRUE(rec.deregistered.empty());  // a's keys may still be in flight
  EXPECT_EQ(reg.registrations(), 2u);
  // Lookups see only the merged one.
  EXPECT_EQ(reg.find(at(0), kPage)->lkey, b.region.lkey);
  EXPECT_EQ(reg.acquire(at(0), kPage).id, b.id);
  reg.release(a.id);
  ASSERT_EQ(rec.deregistered.size(), 1u);
  EXPECT_EQ(rec.deregistered[0].begin, addr(0));
  EXPECT_EQ(rec.deregistered[0].length, 2 * kPage);
  EXPECT_EQ(reg.registrations(), 1u);
}

TEST(IbvMemory, AdjacentRangesMerge) {
  Recorder rec;
  auto reg = rec.make();
  const auto left = reg.acquire(at(0), 2 * kPage);   // pages 0-1
  const auto right = reg.acquire(at(4), 2 * kPage);  // pages 4-5: a gap, no merge
  EXPECT_EQ(rec.registered.size(), 2u);
  const auto middle = reg.acquire(at(2), 2 * kPage);  // pages 2-3 touch both
  ASSERT_EQ(rec.registered.size(), 3u);
  EXPECT_EQ(rec.registered[2].begin, addr(0));
  EXPECT_EQ(rec.registered[2].length, 6 * kPage);
  EXPECT_EQ(reg.find(at(0), 6 * kPage)->lkey, middle.region.lkey);
  reg.release(left.id);
  reg.release(right.id);
  EXPECT_EQ(rec.deregistered.size(), 2u);
  EXPECT_EQ(rec.live(), 1u);
}

TEST(IbvMemory, OneRequestSpanningSeveralRegistrationsMergesThemAll) {
  Recorder rec;
  auto reg = rec.make();
  for (size_t p : {0, 3, 6, 9}) reg.release(reg.acquire(at(p), kPage).id);
  EXPECT_EQ(rec.registered.size(), 4u);
  const auto all = reg.acquire(at(1), 7 * kPage);  // pages 1-7 touch 0, 3, 6 (not 9)
  EXPECT_EQ(all.region.begin, addr(0));
  EXPECT_EQ(all.region.length, 8 * kPage);
  EXPECT_EQ(rec.deregistered.size(), 3u);
  EXPECT_TRUE(reg.find(at(9), kPage).has_value());
}

TEST(IbvMemory, ReferenceCounts) {
  Recorder rec;
  auto reg = rec.make(0);  // cache nothing: unused means deregistered
  const auto a = reg.acquire(at(0), kPage);
  const auto b = reg.acquire(at(0), 10);
  EXPECT_EQ(a.id, b.id);
  reg.release(a.id);
  EXPECT_TRUE(rec.deregistered.empty());
  reg.release(b.id);
  EXPECT_EQ(rec.deregistered.size(), 1u);
  EXPECT_EQ(reg.registrations(), 0u);
  EXPECT_THROW(reg.release(a.id), Error);  // one release too many
  EXPECT_THROW(reg.release(12345), Error);
}

TEST(IbvMemory, UnusedRegistrationsAreCachedUpToTheCap) {
  Recorder rec;
  auto reg = rec.make(3 * kPage);
  for (size_t p : {0, 2, 4}) reg.release(reg.acquire(at(p), kPage).id);
  EXPECT_EQ(reg.unusedBytes(), 3 * kPage);
  EXPECT_TRUE(rec.deregistered.empty());
  // Reuse refreshes page 0, so page 2 is now the least recently used.
  reg.release(reg.acquire(at(0), kPage).id);
  EXPECT_EQ(rec.registered.size(), 3u);
  reg.release(reg.acquire(at(6), kPage).id);  // a fourth page: over the cap
  ASSERT_EQ(rec.deregistered.size(), 1u);
  EXPECT_EQ(rec.deregistered[0].begin, addr(2));
  EXPECT_EQ(reg.unusedBytes(), 3 * kPage);
  // Registrations in use never count against the cap, nor get evicted.
  const auto big = reg.acquire(at(100), 10 * kPage);
  EXPECT_EQ(reg.unusedBytes(), 3 * kPage);
  reg.release(big.id);  // now 13 pages unused: evict oldest until <= 3 pages
  EXPECT_EQ(reg.unusedBytes(), 0u);
  EXPECT_EQ(rec.live(), 0u);
}

TEST(IbvMemory, InvalidateRetiresOverlappingRegistrations) {
  Recorder rec;
  auto reg = rec.make();
  reg.release(reg.acquire(at(0), 2 * kPage).id);
  const auto used = reg.acquire(at(10), kPage);
  reg.release(reg.acquire(at(20), kPage).id);
  reg.invalidate(at(1, 8), 10 * kPage);    // overlaps pages 0-1 and 10, not 20
  EXPECT_EQ(rec.deregistered.size(), 1u);  // the unused one at once
  EXPECT_FALSE(reg.find(at(0), 1).has_value());
  EXPECT_FALSE(reg.find(at(10), 1).has_value());
  EXPECT_TRUE(reg.find(at(20), 1).has_value());
  // New memory at the old address gets a fresh registration.
  const auto fresh = reg.acquire(at(10), kPage);
  EXPECT_NE(fresh.id, used.id);
  reg.release(used.id);
  EXPECT_EQ(rec.deregistered.size(), 2u);
}

TEST(IbvMemory, FailedRegistrationChangesNothing) {
  Recorder rec;
  auto reg = rec.make();
  const auto a = reg.acquire(at(0), kPage);
  rec.failNext = true;
  EXPECT_THROW(reg.acquire(at(1), kPage), Error);  // would have merged with a
  EXPECT_TRUE(rec.deregistered.empty());
  EXPECT_EQ(reg.find(at(0), kPage)->lkey, a.region.lkey);
  EXPECT_EQ(reg.registrations(), 1u);
}

TEST(IbvMemory, RejectsEmptyAndWrappingRanges) {
  Recorder rec;
  auto reg = rec.make();
  for (auto request : {std::pair<const void*, size_t>{at(0), 0},
                       {reinterpret_cast<const void*>(UINTPTR_MAX - 10), 100},
                       {reinterpret_cast<const void*>(UINTPTR_MAX - 10), 5}}) {
    try {
      reg.acquire(request.first, request.second);
      ADD_FAILURE() << request.second << " bytes at " << request.first << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    }
  }
  EXPECT_TRUE(rec.registered.empty());
  EXPECT_THROW(IbvMemoryRegistry([](uintptr_t, size_t) { return IbvRegion{}; },
                                 [](const IbvRegion&) {}, IbvMemoryRegistry::Options{3000, 0}),
               Error);
}

TEST(IbvMemory, DestructionDeregistersEverything) {
  Recorder rec;
  {
    auto reg = rec.make();
    reg.acquire(at(0), kPage);                    // still referenced
    reg.release(reg.acquire(at(5), kPage).id);    // cached
    const auto old = reg.acquire(at(10), kPage);  // retired but referenced
    reg.acquire(at(11), kPage);
    (void)old;
    EXPECT_TRUE(rec.deregistered.empty());
  }
  EXPECT_EQ(rec.registered.size(), 4u);
  EXPECT_EQ(rec.deregistered.size(), 4u);
}

TEST(IbvMemory, LeaseReleasesOnDestructionAndMove) {
  Recorder rec;
  auto reg = rec.make(0);
  {
    IbvMemoryLease lease(reg, at(0), kPage);
    EXPECT_EQ(lease.region().begin, addr(0));
    IbvMemoryLease moved = std::move(lease);
    EXPECT_EQ(moved.region().lkey, 1u);
    IbvMemoryLease other(reg, at(4), kPage);
    other = std::move(moved);  // releases page 4's
    EXPECT_EQ(rec.deregistered.size(), 1u);
    EXPECT_EQ(rec.deregistered[0].begin, addr(4));
  }
  EXPECT_EQ(rec.deregistered.size(), 2u);
}

}  // namespace
}  // namespace loom
#endif  // LOOM_HAVE_IBVERBS
