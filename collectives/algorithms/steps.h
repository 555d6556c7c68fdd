// Step factories shared by the algorithm families. Internal to
// collectives/algorithms: they spell each StepKind with only the fields it uses,
// so plans read like the algorithm they implement.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "collectives/plan.h"

namespace loom::steps {

inline BufferRef in(size_t offset) { return {BufferId::Input, offset}; }
inline BufferRef out(size_t offset) { return {BufferId::Output, offset}; }
inline BufferRef scratch(size_t offset) { return {BufferId::Scratch, offset}; }

// Designated initializers name only the fields each kind uses; the rest keep
// Step's defaults.
inline Step send(int to, BufferRef src, size_t count) {
  return {.kind = StepKind::Send, .sendPeer = to, .src = src, .count = count};
}

inline Step recv(int from, BufferRef dst, size_t count) {
  return {.kind = StepKind::Recv, .recvPeer = from, .dst = dst, .count = count};
}

inline Step recvReduce(int from, BufferRef src, BufferRef dst, size_t count, bool finalize) {
  return {.kind = StepKind::RecvReduce,
          .recvPeer = from,
          .src = src,
          .dst = dst,
          .count = count,
          .finalize = finalize};
}

/// A RecvReduce whose result goes to `to` instead of a buffer.
inline Step recvReduceSend(int from, int to, BufferRef src, size_t count, bool finalize = false) {
  Step s = recvReduce(from, src, {}, count, finalize);
  s.kind = StepKind::RecvReduceSend;
  s.sendPeer = to;
  return s;
}

inline Step recvCopySend(int from, int to, BufferRef dst, size_t count) {
  return {
      .kind = StepKind::RecvCopySend, .sendPeer = to, .recvPeer = from, .dst = dst, .count = count};
}

inline Step copy(BufferRef src, BufferRef dst, size_t count) {
  return {.kind = StepKind::Copy, .src = src, .dst = dst, .count = count};
}

/// Where block `b` of `count` elements per block starts.
inline size_t block(int b, size_t count) { return static_cast<size_t>(b) * count; }

/// A plan of one stream.
inline RankPlan oneStream(std::vector<Step> steps) {
  RankPlan plan;
  plan.streams.push_back(std::move(steps));
  return plan;
}

/// (a mod n) for possibly negative a; ring arithmetic on ranks.
inline int wrap(int a, int n) { return ((a % n) + n) % n; }

}  // namespace loom::steps
