// A choice between two ways of running the same direct round, made by timing
// both on the machine at hand: which is faster depends on where the ranks'
// cores sit relative to each other, and on a VM that changes while a job runs.
// The direct executor makes two such choices (arena_stores.h, two_rank_sum.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/names.h"

namespace loom {

/// Measure, or a setting that fixes the way (the environment's choice).
enum class ChoiceSetting : uint8_t { Measure, First, Second };

/// What a choice is called in the log, and the words of its settings (its
/// environment variable's, which name the two ways in the log too).
struct ChoiceNames {
  std::string_view choice;
  Named<ChoiceSetting> words[3];
  std::string_view way(bool second) const {
    return nameIn(words, second ? ChoiceSetting::Second : ChoiceSetting::First);
  }
};

/// A choice whose environment variable takes `auto` or the word of a way.
constexpr ChoiceNames namedChoice(std::string_view choice, std::string_view first,
                                  std::string_view second) {
  return {choice,
          {{ChoiceSetting::Measure, "auto"},
           {ChoiceSetting::First, first},
           {ChoiceSetting::Second, second}}};
}

/// One choice of one collective on one communicator. Its leader times whole
/// rounds, which include the waits for the peers and so the effect of what
/// everybody did. Where every rank must take the same way, rank 0 leads and
/// publishes its decision in its segment header, and every rank adopts it at
/// the same round; a choice only one rank acts on (a writer's own stores) is
/// led by that rank and adopted by it alone. Each round size class (powers
/// of two) is judged on its own and counts its own rounds. A round right
/// after a change of way is never counted: it also pays for what the other
/// way left in (or out of) the caches, so ways are tried in blocks of
/// kBlockRounds. Where a round's time also holds the end of an earlier round
/// (`lagRounds`: a writer's wait to reuse its arena parity is for readers of
/// the round before last), that many more rounds after a change go uncounted
/// and blocks are that much longer. A class starts with blocks of each way in
/// turn until each has kWarmRounds counted rounds, and keeps each way's fastest:
/// a way's first block also meets the class's cold pages, its second does
/// not. From then on the last block of every kExplorePeriod rounds of the
/// class takes the way not preferred, on every rank alike, so both stay
/// measured as the machine changes; the preferred way's cost is a moving
/// average of its rounds, the other's its latest counted round, and the
/// other takes over once it is faster by more than kSwitchMargin. Only the
/// rounds that ask takesSecond count as ways taken: other traffic between
/// them (an in-place call of the same size, another size) moves the caches
/// unseen, which the moving average absorbs.
class MeasuredChoice {
 public:
  static constexpr uint64_t kExplorePeriod = 64;
  static constexpr uint64_t kBlockRounds = 3;
  static constexpr int kWarmRounds = 4;
  static constexpr int kSizeClasses = 32;
  static constexpr uint64_t kAllWarming = ~uint64_t{0} << 32;
  static constexpr double kSwitchMargin = 0.85;

  explicit MeasuredChoice(ChoiceSetting setting = ChoiceSetting::Measure, int lagRounds = 0)
      : setting_(setting),
        settleRounds_(1 + static_cast<uint64_t>(lagRounds)),
        blockRounds_(kBlockRounds + static_cast<uint64_t>(lagRounds)) {}

  /// Rounds per block of one way (kBlockRounds plus the lag).
  uint64_t blockRounds() const { return blockRounds_; }

  /// Whether the next round of `bytes` takes the second way, by the adopted
  /// decision. Every rank calls it once per round that has the choice, in
  /// the same order, so the rounds it counts per size class (which pick the
  /// warm-up alternation and the exploring rounds) are the same on every rank.
  bool takesSecond(size_t bytes);

  /// Leader: a round of `bytes` that took the `second` way (or the first)
  /// took `nanos`. True where that settled the class's preference (its
  /// warm-up ended) or changed it.
  bool record(size_t bytes, bool second, uint64_t nanos);
  /// Leader: the decision to publish. Bit c: class c prefers the second way
  /// (the faster measured one); bit 32 + c: class c is still warming up.
  uint64_t decision() const { return decision_; }
  /// Every rank: the leader's published decision, for the rounds that ask
  /// takesSecond after it.
  void adopt(uint64_t decision) { adopted_ = decision; }

  /// Whether rounds are timed (no setting fixes the way).
  bool measures() const { return setting_ == ChoiceSetting::Measure; }
  /// The measured cost of a size class, nanoseconds per byte (0: unmeasured).
  double nanosPerByte(size_t bytes, bool second) const {
    return cost_[sizeClass(bytes)][second ? 1 : 0];
  }

  static int sizeClass(size_t bytes);
  /// Whether `decision` has size class c warming up, or preferring the second way.
  static bool warmingIn(uint64_t decision, int c) { return (decision >> (32 + c) & 1U) != 0; }
  static bool secondIn(uint64_t decision, int c) { return (decision >> c & 1U) != 0; }

 private:
  ChoiceSetting setting_;
  uint64_t settleRounds_;  // uncounted rounds after a change of way
  uint64_t blockRounds_;
  uint64_t adopted_ = 0;
  uint64_t decision_ = kAllWarming;  // kept up to date by record()
  /// Rounds asked for by size class: a class's own count, not the global
  /// round number, so a class whose rounds all fall on one parity still
  /// alternates and explores.
  std::array<uint64_t, kSizeClasses> asked_{};
  /// By size class and [second]: cost in ns per byte, and counted rounds up
  /// to kWarmRounds (the warm-up's).
  std::array<std::array<double, 2>, kSizeClasses> cost_{};
  std::array<std::array<int, 2>, kSizeClasses> rounds_{};
  /// By size class: 1 + the way of its last round (0: none yet), and how
  /// many rounds in a row (up to settleRounds_ + 1) have taken it.
  std::array<uint8_t, kSizeClasses> lastWay_{};
  std::array<uint64_t, kSizeClasses> roundsInWay_{};
};

}  // namespace loom
