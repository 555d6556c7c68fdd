// ArenaStoreChoice (collectives/executor/arena_stores.h): which stores the
// direct all-reduce writes its arena rounds with, as rank 0 learns it from
// round times and every rank adopts it.
#include <gtest/gtest.h>

#include <cstdint>

#include "collectives/executor/arena_stores.h"
#include "core/env.h"

namespace loom {
namespace {

constexpr size_t kRound = size_t{1} << 20;

/// The leader's loop for `rounds` rounds starting at `first`: each round runs
/// with the adopted decision, costs what `nanosPerByte(streaming)` says, and
/// the decision is published and adopted for the next round, as the executor
/// does. Returns how many of the rounds streamed.
template <typename Cost>
int run(ArenaStoreChoice& choice, uint64_t first, int rounds, Cost nanosPerByte,
        size_t bytes = kRound) {
  int streamed = 0;
  for (uint64_t round = first; round < first + static_cast<uint64_t>(rounds); ++round) {
    const bool streaming = choice.streams(bytes, round);
    streamed += streaming ? 1 : 0;
    choice.adopt(choice.decision());
    choice.record(bytes, streaming, static_cast<uint64_t>(nanosPerByte(streaming) * bytes));
  }
  return streamed;
}

TEST(ArenaStores, FixedSettingsNeverChange) {
  ArenaStoreChoice cached(ArenaStores::Cached);
  ArenaStoreChoice streaming(ArenaStores::Streaming);
  for (uint64_t round = 0; round < 300; ++round) {
    EXPECT_FALSE(cached.streams(kRound, round));
    EXPECT_TRUE(streaming.streams(kRound, round));
    cached.adopt(~uint64_t{0});  // a leader's decision does not override the setting
    streaming.adopt(0);
  }
}

TEST(ArenaStores, KeepsCachedStoresWhereTheyAreFaster) {
  ArenaStoreChoice choice;
  run(choice, 1, 20, [](bool streaming) { return streaming ? 0.18 : 0.14; });
  EXPECT_FALSE(choice.streams(kRound, 100));
  // 640 settled rounds: only the exploring ones (one in 64) stream.
  EXPECT_EQ(run(choice, 100, 640, [](bool streaming) { return streaming ? 0.18 : 0.14; }), 10);
}

TEST(ArenaStores, StreamsWhereCachedStoresWaitForAFarCore) {
  ArenaStoreChoice choice;
  run(choice, 1, 20, [](bool streaming) { return streaming ? 0.16 : 0.48; });
  EXPECT_TRUE(choice.streams(kRound, 100));
  EXPECT_EQ(run(choice, 100, 640, [](bool streaming) { return streaming ? 0.16 : 0.48; }),
            640 - 10);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.16, 1e-5);
}

TEST(ArenaStores, AlternatesWhileWarmingAndKeepsEachKindsFastestWarmRound) {
  ArenaStoreChoice choice;
  // Adopted nothing yet: cached, as before any measurement.
  EXPECT_FALSE(choice.streams(kRound, 2));
  choice.adopt(choice.decision());
  EXPECT_FALSE(choice.streams(kRound, 2));
  EXPECT_TRUE(choice.streams(kRound, 3));
  // Each kind's first round pays for cold pages and is not counted: the
  // cached one here was 50 times slower, and cached stays the faster kind.
  choice.record(kRound, false, 5 * kRound);
  choice.record(kRound, true, 3 * kRound);
  EXPECT_EQ(choice.nanosPerByte(kRound, false), 0);
  for (int i = 0; i < ArenaStoreChoice::kWarmRounds; ++i) {
    EXPECT_NE(choice.decision() >> 32, 0u) << "still warming after " << i << " pairs";
    choice.record(kRound, false, i == 0 ? kRound / 8 : kRound / 10);
    choice.record(kRound, true, kRound / 5);
  }
  choice.adopt(choice.decision());
  EXPECT_NEAR(choice.nanosPerByte(kRound, false), 0.1, 1e-5);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.2, 1e-5);
  EXPECT_FALSE(choice.streams(kRound, 1000));
  EXPECT_FALSE(choice.streams(kRound, 1001));
}

TEST(ArenaStores, FollowsTheMachineWhenItChanges) {
  ArenaStoreChoice choice;
  const auto near = [](bool streaming) { return streaming ? 0.18 : 0.14; };
  const auto far = [](bool streaming) { return streaming ? 0.16 : 0.48; };
  run(choice, 1, 200, near);
  EXPECT_FALSE(choice.streams(kRound, 300));
  // The vCPUs move apart: cached rounds now wait; within a few rounds it streams.
  run(choice, 300, 8, far);
  EXPECT_TRUE(choice.streams(kRound, 310));
  // And back: cached is only measured on exploring rounds, one of which is
  // enough to win back.
  run(choice, 310, 2 * ArenaStoreChoice::kExplorePeriod, near);
  EXPECT_FALSE(choice.streams(kRound, 310 + 2 * ArenaStoreChoice::kExplorePeriod + 1));
}

TEST(ArenaStores, OneStalledRoundDoesNotFlipTheChoice) {
  ArenaStoreChoice choice;
  const auto near = [](bool streaming) { return streaming ? 0.18 : 0.14; };
  run(choice, 1, 200, near);
  // One cached round 50 times slower (a preempted rank).
  choice.record(kRound, false, 7 * kRound);
  choice.adopt(choice.decision());
  EXPECT_FALSE(choice.streams(kRound, 320));
  // 50 rounds without an exploring one: all cached.
  EXPECT_EQ(run(choice, 320, 50, near), 0);
}

TEST(ArenaStores, SizeClassesAreJudgedApart) {
  ArenaStoreChoice choice;
  constexpr size_t kSmall = size_t{64} << 10;
  // Small rounds favour cached stores, large ones streaming.
  for (uint64_t round = 1; round < 200; ++round) {
    for (const size_t bytes : {kSmall, kRound}) {
      const bool streaming = choice.streams(bytes, round);
      choice.adopt(choice.decision());
      const double cost = bytes == kSmall ? (streaming ? 0.3 : 0.1) : (streaming ? 0.16 : 0.48);
      choice.record(bytes, streaming, static_cast<uint64_t>(cost * static_cast<double>(bytes)));
    }
  }
  EXPECT_FALSE(choice.streams(kSmall, 300));
  EXPECT_TRUE(choice.streams(kRound, 300));
  EXPECT_NE(ArenaStoreChoice::sizeClass(kSmall), ArenaStoreChoice::sizeClass(kRound));
  EXPECT_EQ(ArenaStoreChoice::sizeClass(0), 0);
  EXPECT_EQ(ArenaStoreChoice::sizeClass(SIZE_MAX), ArenaStoreChoice::kSizeClasses - 1);
}

TEST(ArenaStores, EveryRankThatAdoptsTheSameDecisionChoosesAlike) {
  ArenaStoreChoice leader;
  ArenaStoreChoice follower;  // measures nothing itself
  for (uint64_t round = 1; round < 500; ++round) {
    const bool streaming = leader.streams(kRound, round);
    EXPECT_EQ(follower.streams(kRound, round), streaming) << round;
    const uint64_t published = leader.decision();
    leader.adopt(published);
    follower.adopt(published);
    const double cost = round < 250 ? (streaming ? 0.18 : 0.14) : (streaming ? 0.16 : 0.48);
    leader.record(kRound, streaming, static_cast<uint64_t>(cost * kRound));
  }
}

TEST(ArenaStores, EnvironmentWordsAndABadOne) {
  EXPECT_EQ(valueIn(kArenaStoresNames, "auto"), ArenaStores::Auto);
  EXPECT_EQ(valueIn(kArenaStoresNames, "cached"), ArenaStores::Cached);
  EXPECT_EQ(valueIn(kArenaStoresNames, "streaming"), ArenaStores::Streaming);
  setenv("LOOM_ARENA_STORES", "sometimes", 1);
  try {
    envChoice("LOOM_ARENA_STORES", kArenaStoresNames);
    ADD_FAILURE() << "a bad LOOM_ARENA_STORES was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("auto, cached, streaming"), std::string::npos) << e.what();
  }
  unsetenv("LOOM_ARENA_STORES");
  EXPECT_EQ(envChoice("LOOM_ARENA_STORES", kArenaStoresNames), std::nullopt);
}

}  // namespace
}  // namespace loom
