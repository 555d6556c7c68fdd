// MeasuredChoice (collectives/executor/measured_choice.h): which of two ways
// the direct rounds take (arena stores cached or streaming; the two-rank sum
// by shards or whole), as rank 0 learns it from round times and every rank
// adopts it. The costs below are the arena stores' of a 2-core VM.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/executor/arena_stores.h"
#include "collectives/executor/two_rank_sum.h"
#include "core/env.h"

namespace loom {
namespace {

constexpr size_t kRound = size_t{1} << 20;

/// The leader's loop for `rounds` rounds of `bytes`: each round runs with the
/// adopted decision, costs what `nanosPerByte(streaming)` says, and the
/// decision is published and adopted for the next round, as the executor
/// does. Returns how many of the rounds streamed.
template <typename Cost>
int run(MeasuredChoice& choice, int rounds, Cost nanosPerByte, size_t bytes = kRound) {
  int streamed = 0;
  for (int i = 0; i < rounds; ++i) {
    const bool streaming = choice.takesSecond(bytes);
    streamed += streaming ? 1 : 0;
    choice.adopt(choice.decision());
    choice.record(bytes, streaming,
                  static_cast<uint64_t>(nanosPerByte(streaming) * static_cast<double>(bytes)));
  }
  return streamed;
}

/// The leader's current decision for `bytes`: warming up, or which kind.
bool warming(const MeasuredChoice& choice, size_t bytes) {
  return MeasuredChoice::warmingIn(choice.decision(), MeasuredChoice::sizeClass(bytes));
}
bool prefersStreaming(const MeasuredChoice& choice, size_t bytes = kRound) {
  EXPECT_FALSE(warming(choice, bytes));
  return MeasuredChoice::secondIn(choice.decision(), MeasuredChoice::sizeClass(bytes));
}

const auto kNear = [](bool streaming) { return streaming ? 0.18 : 0.14; };
const auto kFar = [](bool streaming) { return streaming ? 0.16 : 0.48; };

TEST(MeasuredChoice, FixedSettingsNeverChange) {
  MeasuredChoice first(ChoiceSetting::First);
  MeasuredChoice second(ChoiceSetting::Second);
  EXPECT_FALSE(first.measures());
  EXPECT_FALSE(second.measures());
  EXPECT_TRUE(MeasuredChoice().measures());
  for (int round = 0; round < 300; ++round) {
    EXPECT_FALSE(first.takesSecond(kRound));
    EXPECT_TRUE(second.takesSecond(kRound));
    first.adopt(~uint64_t{0});  // a leader's decision does not override the setting
    second.adopt(0);
  }
}

TEST(MeasuredChoice, KeepsCachedStoresWhereTheyAreFaster) {
  MeasuredChoice choice;
  run(choice, 20, kNear);
  EXPECT_FALSE(prefersStreaming(choice));
  // The class's rounds 20 to 659: only the exploring ones (the last block of
  // each 64) stream.
  EXPECT_EQ(run(choice, 640, kNear), 10 * MeasuredChoice::kBlockRounds);
}

TEST(MeasuredChoice, StreamsWhereCachedStoresWaitForAFarCore) {
  MeasuredChoice choice;
  run(choice, 20, kFar);
  EXPECT_TRUE(prefersStreaming(choice));
  EXPECT_EQ(run(choice, 640, kFar), 640 - 10 * MeasuredChoice::kBlockRounds);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.16, 1e-5);
}

TEST(MeasuredChoice, WarmsUpInBlocksAndCountsNoRoundAfterAChangeOfWay) {
  static_assert(MeasuredChoice::kBlockRounds == 3 && MeasuredChoice::kWarmRounds == 4);
  MeasuredChoice choice;
  choice.adopt(choice.decision());  // warming up
  // Blocks of the first way and of the second in turn, until each has four
  // counted rounds. The first round of each block pays for what came before
  // it (cold pages, the other way's traces in the caches) and is not
  // counted: the first way's here were 50 times slower, and it is still the
  // faster way. Each way keeps its fastest counted round.
  const uint64_t nanos[] = {5 * kRound,  kRound / 8, kRound / 9,  3 * kRound,
                            kRound / 5,  kRound / 4, 50 * kRound, kRound / 8,
                            kRound / 10, 3 * kRound, kRound / 5,  kRound / 5};
  for (int round = 0; round < 12; ++round) {
    EXPECT_TRUE(warming(choice, kRound)) << "round " << round;
    const bool second = choice.takesSecond(kRound);
    EXPECT_EQ(second, round / 3 % 2 == 1) << "round " << round;
    // The last warm-up round settles the preference (which the log reports).
    EXPECT_EQ(choice.record(kRound, second, nanos[round]), round == 11) << "round " << round;
    choice.adopt(choice.decision());
  }
  EXPECT_NEAR(choice.nanosPerByte(kRound, false), 0.1, 1e-5);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.2, 1e-5);
  EXPECT_FALSE(prefersStreaming(choice));
  // Back to the first way: that round is not counted either, however slow.
  EXPECT_FALSE(choice.takesSecond(kRound));
  EXPECT_FALSE(choice.record(kRound, false, 9 * kRound));
  EXPECT_NEAR(choice.nanosPerByte(kRound, false), 0.1, 1e-5);
  EXPECT_FALSE(choice.takesSecond(kRound));
  EXPECT_FALSE(choice.record(kRound, false, kRound / 10));
  EXPECT_NEAR(choice.nanosPerByte(kRound, false), 0.1, 1e-5);
}

TEST(MeasuredChoice, ALaggingRoundTimeLeavesTwoRoundsUncountedAfterAChange) {
  // A writer choosing alone times a round with the readers of the round before
  // last (arenaStoreLag): blocks of four, the first two of each not counted.
  MeasuredChoice choice(ChoiceSetting::Measure, 1);
  ASSERT_EQ(choice.blockRounds(), MeasuredChoice::kBlockRounds + 1);
  choice.adopt(choice.decision());
  constexpr int kWarm = 16;  // four counted rounds per way, two per block
  for (int round = 0; round < kWarm; ++round) {
    EXPECT_TRUE(warming(choice, kRound)) << "round " << round;
    const bool second = choice.takesSecond(kRound);
    EXPECT_EQ(second, round / 4 % 2 == 1) << "round " << round;
    // The uncounted rounds say the opposite of the counted ones: streaming
    // would win if they counted.
    const bool counted = round % 4 >= 2;
    const uint64_t nanos =
        counted ? (second ? kRound / 5 : kRound / 10) : (second ? kRound / 100 : 100 * kRound);
    EXPECT_EQ(choice.record(kRound, second, nanos), round == kWarm - 1) << "round " << round;
    choice.adopt(choice.decision());
  }
  EXPECT_NEAR(choice.nanosPerByte(kRound, false), 0.1, 1e-5);
  EXPECT_NEAR(choice.nanosPerByte(kRound, true), 0.2, 1e-5);
  EXPECT_FALSE(prefersStreaming(choice));
}

TEST(MeasuredChoice, FollowsTheMachineWhenItChanges) {
  MeasuredChoice choice;
  run(choice, 200, kNear);
  EXPECT_FALSE(prefersStreaming(choice));
  // The vCPUs move apart: cached rounds now wait; within a few rounds it streams.
  run(choice, 8, kFar);
  EXPECT_TRUE(prefersStreaming(choice));
  // And back: cached is only measured in exploring blocks, one of which is
  // enough to win back.
  run(choice, 2 * MeasuredChoice::kExplorePeriod, kNear);
  EXPECT_FALSE(prefersStreaming(choice));
}

TEST(MeasuredChoice, OneStalledRoundDoesNotFlipTheChoice) {
  MeasuredChoice choice;
  run(choice, 200, kNear);
  // One cached round 50 times slower (a preempted rank).
  choice.record(kRound, false, 7 * kRound);
  choice.adopt(choice.decision());
  EXPECT_FALSE(prefersStreaming(choice));
  // The class's rounds 200 to 249, none of them exploring: all cached.
  EXPECT_EQ(run(choice, 50, kNear), 0);
}

TEST(MeasuredChoice, SizeClassesAreJudgedApartWhicheverRoundsTheyFallOn) {
  MeasuredChoice choice;
  constexpr size_t kSmall = size_t{64} << 10;
  // The two sizes alternate, so each falls on every other round of the
  // collective: each still alternates while warming and explores later.
  // Small rounds favour cached stores, large ones streaming.
  int smallStreamed = 0;
  for (int round = 0; round < 640; ++round) {
    for (const size_t bytes : {kSmall, kRound}) {
      const bool streaming = choice.takesSecond(bytes);
      if (bytes == kSmall && round >= 40) smallStreamed += streaming ? 1 : 0;
      choice.adopt(choice.decision());
      const double cost = bytes == kSmall ? (streaming ? 0.3 : 0.1) : (streaming ? 0.16 : 0.48);
      choice.record(bytes, streaming, static_cast<uint64_t>(cost * static_cast<double>(bytes)));
    }
  }
  EXPECT_FALSE(prefersStreaming(choice, kSmall));
  EXPECT_TRUE(prefersStreaming(choice, kRound));
  // Its rounds 40 to 639: the exploring ones.
  EXPECT_EQ(smallStreamed, 10 * MeasuredChoice::kBlockRounds);
  EXPECT_NE(MeasuredChoice::sizeClass(kSmall), MeasuredChoice::sizeClass(kRound));
  EXPECT_EQ(MeasuredChoice::sizeClass(0), 0);
  EXPECT_EQ(MeasuredChoice::sizeClass(SIZE_MAX), MeasuredChoice::kSizeClasses - 1);
}

TEST(MeasuredChoice, EveryRankThatAdoptsTheSameDecisionChoosesAlike) {
  MeasuredChoice leader;
  MeasuredChoice follower;  // measures nothing itself
  for (int round = 1; round < 500; ++round) {
    const bool streaming = leader.takesSecond(kRound);
    EXPECT_EQ(follower.takesSecond(kRound), streaming) << round;
    const uint64_t published = leader.decision();
    leader.adopt(published);
    follower.adopt(published);
    const double cost = round < 250 ? kNear(streaming) : kFar(streaming);
    leader.record(kRound, streaming, static_cast<uint64_t>(cost * kRound));
  }
}

// The executor adopts the two-rank sum's decision in the round it decides:
// if a counted round of an exploring block makes the explored way the
// preferred one, the block goes on with it rather than coming back for a round.
TEST(MeasuredChoice, AnExploringBlockKeepsItsWayWhenThePreferenceFlipsInsideIt) {
  constexpr uint64_t kPeriod = MeasuredChoice::kExplorePeriod;
  constexpr uint64_t kBlock = kPeriod - MeasuredChoice::kBlockRounds;  // its first round
  MeasuredChoice choice;
  std::vector<bool> ways;
  std::vector<uint64_t> changes;  // rounds whose record settled or changed the preference
  for (uint64_t round = 0; round < 2 * kPeriod; ++round) {
    choice.adopt(choice.decision());
    const bool second = choice.takesSecond(kRound);
    ways.push_back(second);
    // The second way is the slower until the first exploring block, where
    // it has become twice as fast as the first.
    const double perByte = !second ? 0.1 : (round < kBlock ? 0.2 : 0.05);
    if (choice.record(kRound, second, static_cast<uint64_t>(perByte * kRound))) {
      changes.push_back(round);
    }
  }
  EXPECT_EQ(changes, (std::vector<uint64_t>{11, kBlock + 1}));
  // The block's first round is not counted (a change of way); its second
  // makes the second way preferred, and every round from there on takes it
  // up to the next exploring block, which tries the first way again.
  for (uint64_t round = 12; round < 2 * kPeriod; ++round) {
    const bool second = round >= kBlock && round < kPeriod + kBlock;
    EXPECT_EQ(ways[round], second) << "round " << round;
  }
}

// Each choice's environment words, and a word it does not take.
TEST(MeasuredChoice, EnvironmentWordsAndABadOne) {
  const struct {
    const char* variable;
    const ChoiceNames& names;
    const char* words[3];
  } choices[] = {{"LOOM_ARENA_STORES", kArenaStoreNames, {"auto", "cached", "streaming"}},
                 {"LOOM_TWO_RANK_SUM", kTwoRankSumNames, {"auto", "shards", "whole"}}};
  for (const auto& c : choices) {
    EXPECT_EQ(valueIn(c.names.words, c.words[0]), ChoiceSetting::Measure);
    EXPECT_EQ(valueIn(c.names.words, c.words[1]), ChoiceSetting::First);
    EXPECT_EQ(valueIn(c.names.words, c.words[2]), ChoiceSetting::Second);
    EXPECT_EQ(c.names.way(false), c.words[1]);
    EXPECT_EQ(c.names.way(true), c.words[2]);
    setenv(c.variable, "sometimes", 1);
    try {
      envChoice(c.variable, c.names.words);
      ADD_FAILURE() << "a bad " << c.variable << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      const std::string all = std::string(c.words[0]) + ", " + c.words[1] + ", " + c.words[2];
      EXPECT_NE(std::string(e.what()).find(all), std::string::npos) << e.what();
    }
    unsetenv(c.variable);
    EXPECT_EQ(envChoice(c.variable, c.names.words), std::nullopt);
  }
}

}  // namespace
}  // namespace loom
