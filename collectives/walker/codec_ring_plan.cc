#include "collectives/walker/codec_ring_plan.h"

#include "collectives/algorithms.h"

namespace loom::walk {
namespace {

int wrap(int i, int n) { return ((i % n) + n) % n; }

}  // namespace

RankPlan codecRingReduceScatterPlan(int rank, int nranks, size_t total) {
  RankPlan plan;
  plan.streams.emplace_back();
  if (nranks < 2) return plan;
  std::vector<Step>& steps = plan.streams.front();
  const int right = wrap(rank + 1, nranks);
  const int left = wrap(rank - 1, nranks);
  auto chunkStep = [&](StepKind kind, int chunk) {
    Step s;
    s.kind = kind;
    s.src = {BufferId::Input, chunkOffset(total, nranks, chunk)};
    s.count = chunkSize(total, nranks, chunk);
    if (kind != StepKind::RecvReduce) s.sendPeer = right;
    if (kind != StepKind::Send) s.recvPeer = left;
    return s;
  };
  steps.push_back(chunkStep(StepKind::Send, wrap(rank - 1, nranks)));
  for (int hop = 0; hop + 1 < nranks - 1; ++hop) {
    steps.push_back(chunkStep(StepKind::RecvReduceSend, wrap(rank - 2 - hop, nranks)));
  }
  Step last = chunkStep(StepKind::RecvReduce, rank);
  last.dst = {BufferId::Output, 0};
  steps.push_back(last);
  return plan;
}

RankPlan ringHopPlan(int rank, int nranks, size_t count) {
  RankPlan plan;
  plan.streams.emplace_back();
  if (nranks < 2) return plan;
  Step send;
  send.kind = StepKind::Send;
  send.sendPeer = wrap(rank + 1, nranks);
  send.src = {BufferId::Input, 0};
  send.count = count;
  Step recv;
  recv.kind = StepKind::Recv;
  recv.recvPeer = wrap(rank - 1, nranks);
  recv.dst = {BufferId::Output, 0};
  recv.count = count;
  plan.streams.front() = {send, recv};
  return plan;
}

}  // namespace loom::walk
