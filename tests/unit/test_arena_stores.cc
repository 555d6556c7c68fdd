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

/// The leader's loop for `rounds` rounds of `bytes`: each round runs with the
/// adopted decision, costs what `nanosPerByte(streaming)` says, and the
/// decision is published and adopted for the next round, as the executor
/// does. Returns how many of the rounds streamed.
template <typename Cost>
int run(ArenaStoreChoice& choice, int rounds, Cost nanosPerByte, size_t bytes = kRound) {
  int streamed = 0;
  for (int i = 0; i < rounds; ++i) {
    const bool streaming = choice.streams(bytes);
    streamed += streaming ? 1 : 0;
    choice.adopt(choice.decision());
    choice.record(bytes, streaming,
                  static_cast<uint64_t>(nanosPerByte(streaming) * static_cast<double>(bytes)));
  }
  return streamed;
}

/// The leader's current decision for `bytes`: warming up, or which kind.
bool warming(const ArenaStoreChoice& choice, size_t bytes) {
  return (choice.decision() >> (32 + ArenaStoreChoice::sizeClass(bytes)) & 1U) != 0;
}
bool prefersStreaming(const ArenaStoreChoice& choice, size_t bytes = kRound) {
  EXPECT_FALSE(warming(choice, bytes));
  return (choice.decision() >> ArenaStoreChoice::sizeClass(bytes) & 1U) != 0;
}

const auto kNear = [](bool streaming) { return streaming ? 0.18 : 0.14; };
const auto kFar = [](bool streaming) { return streaming ? 0.16 : 0.48; };

TEST(ArenaStores, FixedSettingsNeverChange) {
  ArenaStoreChoice cached(ArenaStores::Cached);
  ArenaStoreChoice streaming(ArenaStores::Streaming);
  for (int round = 0; round < 300; ++round) {
    EXPECT_FALSE(cached.streams(kRound));
    EXPECT_TRUE(streaming.streams(kRound));
    cached.adopt(~uint64_t{0});  // a leader's decision does not override the setting
    streaming.adopt(0);
  }
}

TEST(ArenaStores, KeepsCachedStoresWhereTheyAreFaster) {
  ArenaStoreChoice choice;
  run(choice, 20, kNear);
  EXPECT_FALSE(prefersStreaming(choice));
  // The class's rounds 20 to 659: only the exploring ones (one in 64) stream.
  EXPECT_EQ(run(choice, 640, kNear), 10);
}

TEST(ArenaStores, StreamsWhereCachedStoresWaitForAFarCore) {
  ArenaStoreChoice choice;
  run(choice, 20, kFar);
  EXPECT_TRUE(prefersStreaming(choice));
  EXPECT_EQ(run(choice, 640, kFar), 640 - 10);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.16, 1e-5);
}

TEST(ArenaStores, AlternatesWhileWarmingAndKeepsEachKindsFastestWarmRound) {
  ArenaStoreChoice choice;
  // Adopted nothing yet: cached, as before any measurement.
  EXPECT_FALSE(choice.streams(kRound));
  choice.adopt(choice.decision());
  EXPECT_TRUE(choice.streams(kRound));
  EXPECT_FALSE(choice.streams(kRound));
  // Each kind's first round pays for cold pages and is not counted: the
  // cached one here was 50 times slower, and cached stays the faster kind.
  choice.record(kRound, false, 5 * kRound);
  choice.record(kRound, true, 3 * kRound);
  EXPECT_EQ(choice.nanosPerByte(kRound, false), 0);
  for (int i = 0; i < ArenaStoreChoice::kWarmRounds; ++i) {
    EXPECT_TRUE(warming(choice, kRound)) << "after " << i << " pairs";
    choice.record(kRound, false, i == 0 ? kRound / 8 : kRound / 10);
    choice.record(kRound, true, kRound / 5);
  }
  choice.adopt(choice.decision());
  EXPECT_NEAR(choice.nanosPerByte(kRound, false), 0.1, 1e-5);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.2, 1e-5);
  EXPECT_FALSE(prefersStreaming(choice));
  EXPECT_FALSE(choice.streams(kRound));
  EXPECT_FALSE(choice.streams(kRound));
}

TEST(ArenaStores, FollowsTheMachineWhenItChanges) {
  ArenaStoreChoice choice;
  run(choice, 200, kNear);
  EXPECT_FALSE(prefersStreaming(choice));
  // The vCPUs move apart: cached rounds now wait; within a few rounds it streams.
  run(choice, 8, kFar);
  EXPECT_TRUE(prefersStreaming(choice));
  // And back: cached is only measured on exploring rounds, one of which is
  // enough to win back.
  run(choice, 2 * ArenaStoreChoice::kExplorePeriod, kNear);
  EXPECT_FALSE(prefersStreaming(choice));
}

TEST(ArenaStores, OneStalledRoundDoesNotFlipTheChoice) {
  ArenaStoreChoice choice;
  run(choice, 200, kNear);
  // One cached round 50 times slower (a preempted rank).
  choice.record(kRound, false, 7 * kRound);
  choice.adopt(choice.decision());
  EXPECT_FALSE(prefersStreaming(choice));
  // The class's rounds 200 to 249, none of them exploring: all cached.
  EXPECT_EQ(run(choice, 50, kNear), 0);
}

TEST(ArenaStores, SizeClassesAreJudgedApartWhicheverRoundsTheyFallOn) {
  ArenaStoreChoice choice;
  constexpr size_t kSmall = size_t{64} << 10;
  // The two sizes alternate, so each falls on every other round of the
  // collective: each still alternates while warming and explores later.
  // Small rounds favour cached stores, large ones streaming.
  int smallStreamed = 0;
  for (int round = 0; round < 640; ++round) {
    for (const size_t bytes : {kSmall, kRound}) {
      const bool streaming = choice.streams(bytes);
      if (bytes == kSmall && round >= 40) smallStreamed += streaming ? 1 : 0;
      choice.adopt(choice.decision());
      const double cost = bytes == kSmall ? (streaming ? 0.3 : 0.1) : (streaming ? 0.16 : 0.48);
      choice.record(bytes, streaming, static_cast<uint64_t>(cost * static_cast<double>(bytes)));
    }
  }
  EXPECT_FALSE(prefersStreaming(choice, kSmall));
  EXPECT_TRUE(prefersStreaming(choice, kRound));
  EXPECT_EQ(smallStreamed, 10);  // its rounds 40 to 639: the exploring ones
  EXPECT_NE(ArenaStoreChoice::sizeClass(kSmall), ArenaStoreChoice::sizeClass(kRound));
  EXPECT_EQ(ArenaStoreChoice::sizeClass(0), 0);
  EXPECT_EQ(ArenaStoreChoice::sizeClass(SIZE_MAX), ArenaStoreChoice::kSizeClasses - 1);
}

TEST(ArenaStores, EveryRankThatAdoptsTheSameDecisionChoosesAlike) {
  ArenaStoreChoice leader;
  ArenaStoreChoice follower;  // measures nothing itself
  for (int round = 1; round < 500; ++round) {
    const bool streaming = leader.streams(kRound);
    EXPECT_EQ(follower.streams(kRound), streaming) << round;
    const uint64_t published = leader.decision();
    leader.adopt(published);
    follower.adopt(published);
    const double cost = round < 250 ? kNear(streaming) : kFar(streaming);
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
