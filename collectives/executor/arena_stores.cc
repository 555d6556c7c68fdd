#include "collectives/executor/arena_stores.h"

#include <algorithm>
#include <bit>

namespace loom {

int ArenaStoreChoice::sizeClass(size_t bytes) {
  return std::min(static_cast<int>(std::bit_width(bytes)), kSizeClasses - 1);
}

bool ArenaStoreChoice::streams(size_t bytes) {
  switch (setting_) {
    case ArenaStores::Cached:
      return false;
    case ArenaStores::Streaming:
      return true;
    case ArenaStores::Auto:
      break;
  }
  const int c = sizeClass(bytes);
  const uint64_t round = asked_[c]++;
  if ((adopted_ >> (32 + c) & 1U) != 0) return round % 2 == 1;
  const bool preferred = (adopted_ >> c & 1U) != 0;
  const bool exploring = round % kExplorePeriod == kExplorePeriod - 1;
  return preferred != exploring;
}

void ArenaStoreChoice::record(size_t bytes, bool streaming, uint64_t nanos) {
  if (bytes == 0) return;
  const int c = sizeClass(bytes);
  const int kind = streaming ? 1 : 0;
  double& cost = cost_[c][kind];
  const double sample = static_cast<double>(nanos) / static_cast<double>(bytes);
  const uint64_t warming = uint64_t{1} << (32 + c);
  const uint64_t streamingBit = uint64_t{1} << c;
  const bool preferred = ((decision_ & streamingBit) != 0) == streaming;
  const int seen = rounds_[c][kind]++;
  if (seen == 0) {
    // Not counted: a kind's first round also pays for whatever it touches
    // first (fresh pages, cold caches), which would count against it.
  } else if (seen <= kWarmRounds) {
    cost = cost == 0 ? sample : std::min(cost, sample);
  } else if (preferred) {
    // A quarter of each new round, a round counted at most twice the cost so
    // far: a machine that changed (a VM's vCPUs moved) is followed within a
    // few rounds, while one stalled round (a preempted rank) moves it little.
    cost = 0.75 * cost + 0.25 * std::min(sample, 2 * cost);
  } else {
    // Measured once per kExplorePeriod rounds: the latest round says most.
    cost = sample;
  }
  if (rounds_[c][0] <= kWarmRounds || rounds_[c][1] <= kWarmRounds) {
    decision_ = (decision_ & ~streamingBit) | warming;
    return;
  }
  const bool wasStreaming = (decision_ & streamingBit) != 0 && (decision_ & warming) == 0;
  decision_ &= ~(warming | streamingBit);
  // The other kind must be clearly faster (by kSwitchMargin) to take over.
  const double current = cost_[c][wasStreaming ? 1 : 0];
  const double other = cost_[c][wasStreaming ? 0 : 1];
  const bool nowStreaming = other < kSwitchMargin * current ? !wasStreaming : wasStreaming;
  if (nowStreaming) decision_ |= streamingBit;
}

}  // namespace loom
