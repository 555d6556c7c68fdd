// What one directed link costs a message: the unit the cost model prices
// (TunerTopology's hops) and the timed simulator replays.
#pragma once

namespace loom {

struct LinkCost {
  double latency = 0.0;    ///< microseconds from the end of sending to arrival
  double bandwidth = 0.0;  ///< GB/s (= 1e3 bytes per microsecond); must be > 0 where used
};

}  // namespace loom
