// Ring algorithms: rank r sends to r+1 and receives from r-1 (mod nranks).
// Every step moves one chunk one hop; the executor's slice-outer order turns
// the chain of steps into a pipeline, so no step here needs to be split.
#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "collectives/algorithms/steps.h"

namespace loom::detail {

using namespace steps;

namespace {

struct Ring {
  int rank;
  int nranks;
  int next() const { return wrap(rank + 1, nranks); }
  int prev() const { return wrap(rank - 1, nranks); }
};

// Reduce-scatter then all-gather over nranks chunks of `count` (the two
// halves below), the last reduce-scatter step and the first all-gather send
// fused into one RecvReduceCopySend. Reading the input before the output is
// written at the same positions (same slice, earlier step) makes the plan
// in-place safe.
std::vector<Step> allReduce(const PlanRequest& req, Ring ring) {
  std::vector<Step> s = ringReduceScatterChunks(ring.rank, ring.nranks, req.count, true);
  const std::vector<Step> gather = ringAllGatherChunks(ring.rank, ring.nranks, req.count);
  s.back().kind = StepKind::RecvReduceCopySend;
  s.back().sendPeer = gather.front().sendPeer;
  s.insert(s.end(), gather.begin() + 1, gather.end());
  return s;
}

// Block b of the output is rank b's input; rank r forwards block r-k in step k.
std::vector<Step> allGather(const PlanRequest& req, Ring ring) {
  const int n = ring.nranks;
  const size_t count = req.count;
  std::vector<Step> s;
  // In place, the input already is output block `rank`.
  if (!req.inPlace) s.push_back(copy(in(0), out(block(ring.rank, count)), count));
  s.push_back(send(ring.next(), in(0), count));
  for (int k = 1; k < n - 1; ++k) {
    s.push_back(
        recvCopySend(ring.prev(), ring.next(), out(block(wrap(ring.rank - k, n), count)), count));
  }
  s.push_back(recv(ring.prev(), out(block(ring.next(), count)), count));
  return s;
}

// The reduce-scatter half of allReduce with whole input blocks as chunks; the
// last step completes block `rank` straight into the output.
std::vector<Step> reduceScatter(const PlanRequest& req, Ring ring) {
  const int n = ring.nranks;
  const size_t count = req.count;
  std::vector<Step> s;
  int c = wrap(ring.rank - 1, n);
  s.push_back(send(ring.next(), in(block(c, count)), count));
  for (int k = 1; k < n - 1; ++k) {
    c = wrap(ring.rank - k - 1, n);
    s.push_back(recvReduceSend(ring.prev(), ring.next(), in(block(c, count)), count));
  }
  s.push_back(recvReduce(ring.prev(), in(block(ring.rank, count)), out(0), count, true));
  return s;
}

// A chain root -> root+1 -> ... -> root-1.
std::vector<Step> broadcast(const PlanRequest& req, Ring ring) {
  const int n = ring.nranks;
  const int position = wrap(ring.rank - req.root, n);
  std::vector<Step> s;
  if (position == 0) {
    if (!req.inPlace) s.push_back(copy(in(0), out(0), req.count));
    s.push_back(send(ring.next(), in(0), req.count));
  } else if (position < n - 1) {
    s.push_back(recvCopySend(ring.prev(), ring.next(), out(0), req.count));
  } else {
    s.push_back(recv(ring.prev(), out(0), req.count));
  }
  return s;
}

// A chain root+1 -> root+2 -> ... -> root; partial sums travel in flight, so
// only the root writes an output.
std::vector<Step> reduce(const PlanRequest& req, Ring ring) {
  const int n = ring.nranks;
  const int position = wrap(ring.rank - req.root - 1, n);
  std::vector<Step> s;
  if (position == 0) {
    s.push_back(send(ring.next(), in(0), req.count));
  } else if (position < n - 1) {
    s.push_back(recvReduceSend(ring.prev(), ring.next(), in(0), req.count));
  } else {
    s.push_back(recvReduce(ring.prev(), in(0), out(0), req.count, true));
  }
  return s;
}

/// One stream of `kSteps`; on one rank every ring collective degenerates to
/// input -> output (the output of a one-rank reduce, all-gather or
/// reduce-scatter is exactly `count` elements).
template <std::vector<Step> (*kSteps)(const PlanRequest&, Ring)>
RankPlan onRing(const PlanRequest& req) {
  if (req.nranks > 1) return oneStream(kSteps(req, Ring{req.rank, req.nranks}));
  return oneStream(req.inPlace ? std::vector<Step>{} : std::vector{copy(in(0), out(0), req.count)});
}

}  // namespace

// In step s rank r handles chunk r-s-1, so the partial sum of chunk c reaches
// rank c complete in step nranks-1, straight into the output.
std::vector<Step> ringReduceScatterChunks(int rank, int nranks, size_t count, bool finalize) {
  const Ring ring{rank, nranks};
  auto off = [&](int c) { return chunkOffset(count, nranks, c); };
  auto size = [&](int c) { return chunkSize(count, nranks, c); };
  std::vector<Step> s;
  int c = wrap(rank - 1, nranks);
  s.push_back(send(ring.next(), in(off(c)), size(c)));
  for (int k = 1; k < nranks - 1; ++k) {
    c = wrap(rank - k - 1, nranks);
    s.push_back(recvReduceSend(ring.prev(), ring.next(), in(off(c)), size(c)));
  }
  s.push_back(recvReduce(ring.prev(), in(off(rank)), out(off(rank)), size(rank), finalize));
  return s;
}

// Rank r forwards chunk r-k of the output in step k.
std::vector<Step> ringAllGatherChunks(int rank, int nranks, size_t count) {
  const Ring ring{rank, nranks};
  auto off = [&](int c) { return chunkOffset(count, nranks, c); };
  auto size = [&](int c) { return chunkSize(count, nranks, c); };
  std::vector<Step> s;
  s.push_back(send(ring.next(), out(off(rank)), size(rank)));
  for (int k = 1; k < nranks - 1; ++k) {
    const int c = wrap(rank - k, nranks);
    s.push_back(recvCopySend(ring.prev(), ring.next(), out(off(c)), size(c)));
  }
  const int last = wrap(rank + 1, nranks);
  s.push_back(recv(ring.prev(), out(off(last)), size(last)));
  return s;
}

RankPlan ringAllReduce(const PlanRequest& req) { return onRing<allReduce>(req); }
RankPlan ringAllGather(const PlanRequest& req) { return onRing<allGather>(req); }
RankPlan ringReduceScatter(const PlanRequest& req) { return onRing<reduceScatter>(req); }
RankPlan ringBroadcast(const PlanRequest& req) { return onRing<broadcast>(req); }
RankPlan ringReduce(const PlanRequest& req) { return onRing<reduce>(req); }

}  // namespace loom::detail
