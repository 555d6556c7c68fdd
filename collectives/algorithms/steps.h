// Step factories shared by the algorithm families. Internal to
// collectives/algorithms: they spell each StepKind with only the fields it uses,
// so plans read like the algorithm they implement.
#pragma once

#include <cstddef>

#include "collectives/plan.h"

namespace loom::steps {

inline BufferRef in(size_t offset) { return {BufferId::Input, offset}; }
inline BufferRef out(size_t offset) { return {BufferId::Output, offset}; }
inline BufferRef scratch(size_t offset) { return {BufferId::Scratch, offset}; }

inline Step send(int to, BufferRef src, size_t count) {
  Step s;
  s.kind = StepKind::Send;
  s.sendPeer = to;
  s.src = src;
  s.count = count;
  return s;
}

inline Step recv(int from, BufferRef dst, size_t count) {
  Step s;
  s.kind = StepKind::Recv;
  s.recvPeer = from;
  s.dst = dst;
  s.count = count;
  return s;
}

inline Step recvReduce(int from, BufferRef src, BufferRef dst, size_t count, bool finalize) {
  Step s;
  s.kind = StepKind::RecvReduce;
  s.recvPeer = from;
  s.src = src;
  s.dst = dst;
  s.count = count;
  s.finalize = finalize;
  return s;
}

inline Step recvReduceSend(int from, int to, BufferRef src, size_t count, bool finalize = false) {
  Step s;
  s.kind = StepKind::RecvReduceSend;
  s.recvPeer = from;
  s.sendPeer = to;
  s.src = src;
  s.count = count;
  s.finalize = finalize;
  return s;
}

inline Step recvCopySend(int from, int to, BufferRef dst, size_t count) {
  Step s;
  s.kind = StepKind::RecvCopySend;
  s.recvPeer = from;
  s.sendPeer = to;
  s.dst = dst;
  s.count = count;
  return s;
}

inline Step copy(BufferRef src, BufferRef dst, size_t count) {
  Step s;
  s.kind = StepKind::Copy;
  s.src = src;
  s.dst = dst;
  s.count = count;
  return s;
}

/// (a mod n) for possibly negative a; ring arithmetic on ranks.
inline int wrap(int a, int n) { return ((a % n) + n) % n; }

}  // namespace loom::steps
