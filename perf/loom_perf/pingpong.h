// Core-to-core latency: the round trip of one cache line between two
// processes, which bounds every small message and every arena round.
#ifndef LOOM_PERF_LOOM_PERF_PINGPONG_H_
#define LOOM_PERF_LOOM_PERF_PINGPONG_H_

namespace perf {

/// Bounces a cache line between this process and a forked child, prints the
/// best round trip of a few batches and returns 0 (1 if the child failed).
int runPingPong();

}  // namespace perf

#endif  // LOOM_PERF_LOOM_PERF_PINGPONG_H_
