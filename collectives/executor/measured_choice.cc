#include "collectives/executor/measured_choice.h"

#include <algorithm>
#include <bit>

namespace loom {

int MeasuredChoice::sizeClass(size_t bytes) {
  return std::min(static_cast<int>(std::bit_width(bytes)), kSizeClasses - 1);
}

bool MeasuredChoice::takesSecond(size_t bytes) {
  switch (setting_) {
    case ChoiceSetting::First:
      return false;
    case ChoiceSetting::Second:
      return true;
    case ChoiceSetting::Measure:
      break;
  }
  const int c = sizeClass(bytes);
  const uint64_t round = asked_[c]++;
  bool second = false;
  if (warmingIn(adopted_, c)) {
    second = round / blockRounds_ % 2 == 1;
  } else if (round % kExplorePeriod > kExplorePeriod - blockRounds_) {
    // Inside the exploring block: its way, even where a round of it just
    // changed the preference (it would otherwise come back for one round).
    second = lastWay_[c] == 2;
  } else {
    const bool preferred = secondIn(adopted_, c);
    const bool exploring = round % kExplorePeriod == kExplorePeriod - blockRounds_;
    second = preferred != exploring;
  }
  const uint8_t way = second ? 2 : 1;
  roundsInWay_[c] = lastWay_[c] == way ? std::min(roundsInWay_[c] + 1, settleRounds_ + 1) : 1;
  lastWay_[c] = way;
  return second;
}

bool MeasuredChoice::record(size_t bytes, bool second, uint64_t nanos) {
  if (bytes == 0) return false;
  const int c = sizeClass(bytes);
  const int way = second ? 1 : 0;
  double& cost = cost_[c][way];
  const double sample = static_cast<double>(nanos) / static_cast<double>(bytes);
  const uint64_t warming = uint64_t{1} << (32 + c);
  const uint64_t secondBit = uint64_t{1} << c;
  const bool preferred = ((decision_ & secondBit) != 0) == second;
  int& counted = rounds_[c][way];
  if (roundsInWay_[c] <= settleRounds_) {
    // Not counted: the first round after a change of way also pays for what
    // the other way left behind (lines it evicted or streamed past the
    // cache, pages it never touched), which would count against it; with a
    // lag, the next ones still hold the other way's earlier rounds.
  } else if (counted < kWarmRounds) {
    cost = counted == 0 ? sample : std::min(cost, sample);
    ++counted;
  } else if (preferred) {
    // A quarter of each new round, a round counted at most twice the cost so
    // far: a machine that changed (a VM's vCPUs moved) is followed within a
    // few rounds, while one stalled round (a preempted rank) moves it little.
    cost = 0.75 * cost + 0.25 * std::min(sample, 2 * cost);
  } else {
    // Measured in one block per kExplorePeriod rounds: the latest round says most.
    cost = sample;
  }
  if (rounds_[c][0] < kWarmRounds || rounds_[c][1] < kWarmRounds) {
    decision_ = (decision_ & ~secondBit) | warming;
    return false;
  }
  const bool wasWarming = (decision_ & warming) != 0;
  const bool wasSecond = (decision_ & secondBit) != 0 && !wasWarming;
  decision_ &= ~(warming | secondBit);
  // The other way must be clearly faster (by kSwitchMargin) to take over.
  const double current = cost_[c][wasSecond ? 1 : 0];
  const double other = cost_[c][wasSecond ? 0 : 1];
  const bool nowSecond = other < kSwitchMargin * current ? !wasSecond : wasSecond;
  if (nowSecond) decision_ |= secondBit;
  return wasWarming || nowSecond != wasSecond;
}

}  // namespace loom
