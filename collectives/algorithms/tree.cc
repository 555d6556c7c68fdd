// Double binary tree algorithms. The message is cut in two halves; half t
// travels tree t in stream t, so the two halves progress side by side and
// every rank forwards (is interior) for at most one of them.
#include <algorithm>
#include <utility>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "collectives/algorithms/steps.h"

namespace loom::detail {
namespace {

using namespace steps;

struct Half {
  size_t offset;
  size_t count;
};

std::vector<int> childrenOf(const TreeLinks& links) {
  std::vector<int> out;
  for (int c : links.children) {
    if (c >= 0) out.push_back(c);
  }
  return out;
}

// Combines the children's partial results with this rank's input. A rank with
// a parent sends the sum up, fusing the last child's receive with that send;
// the root (no parent) finalizes into the output. A rank with two children
// needs a place for the first partial sum: `partial`, the output where the
// rank has one and scratch otherwise.
void reduceUp(std::vector<Step>& s, const TreeLinks& links, Half h, BufferRef partial) {
  const std::vector<int> children = childrenOf(links);
  if (children.empty()) {
    s.push_back(send(links.parent, in(h.offset), h.count));
    return;
  }
  BufferRef acc = in(h.offset);
  for (size_t i = 0; i < children.size(); ++i) {
    const bool last = i + 1 == children.size();
    if (last && links.parent >= 0) {
      s.push_back(recvReduceSend(children[i], links.parent, acc, h.count));
    } else {
      s.push_back(recvReduce(children[i], acc, partial, h.count, last));
      acc = partial;
    }
  }
}

// Receives the result into the output from the parent (the root already has
// it) and forwards it to the children.
void broadcastDown(std::vector<Step>& s, const TreeLinks& links, Half h) {
  const std::vector<int> children = childrenOf(links);
  size_t first = 0;
  if (links.parent >= 0) {
    if (children.empty()) {
      s.push_back(recv(links.parent, out(h.offset), h.count));
      return;
    }
    s.push_back(recvCopySend(links.parent, children[0], out(h.offset), h.count));
    first = 1;
  }
  for (size_t i = first; i < children.size(); ++i) {
    s.push_back(send(children[i], out(h.offset), h.count));
  }
}

bool needsScratch(const TreeLinks& links) {
  return links.parent >= 0 && links.children[0] >= 0 && links.children[1] >= 0;
}

/// Half t of the count travels tree t in stream t: `addHalf(plan, stream,
/// half, t)` adds its steps. On one rank the plan is input -> output.
template <typename AddHalf>
RankPlan twoHalves(const PlanRequest& req, AddHalf addHalf) {
  RankPlan plan;
  if (req.nranks == 1) {
    if (!req.inPlace) plan.streams.push_back({copy(in(0), out(0), req.count)});
    return plan;
  }
  for (int t = 0; t < 2; ++t) {
    const Half h{chunkOffset(req.count, 2, t), chunkSize(req.count, 2, t)};
    std::vector<Step> stream;
    addHalf(plan, stream, h, t);
    plan.streams.push_back(std::move(stream));
  }
  return plan;
}

}  // namespace

RankPlan treeAllReduce(const PlanRequest& req) {
  return twoHalves(req, [&](RankPlan&, std::vector<Step>& s, Half h, int t) {
    const TreeLinks links = doubleBinaryTree(req.rank, req.nranks, t);
    reduceUp(s, links, h, out(h.offset));
    broadcastDown(s, links, h);
  });
}

RankPlan treeBroadcast(const PlanRequest& req) {
  return twoHalves(req, [&](RankPlan&, std::vector<Step>& s, Half h, int t) {
    const TreeLinks links = rootedDoubleBinaryTree(req.rank, req.nranks, req.root, t);
    if (req.rank != req.root) {
      broadcastDown(s, links, h);
      return;
    }
    if (!req.inPlace) s.push_back(copy(in(h.offset), out(h.offset), h.count));
    // The root sends from its input: its output may be a different buffer.
    s.push_back(send(links.children[0], in(h.offset), h.count));
  });
}

RankPlan treeReduce(const PlanRequest& req) {
  return twoHalves(req, [&](RankPlan& plan, std::vector<Step>& s, Half h, int t) {
    // Non-root ranks have no output, so one with two children keeps its
    // partial sum in scratch. A non-root rank is interior in one tree only, so
    // both halves can start their scratch at 0.
    const TreeLinks links = rootedDoubleBinaryTree(req.rank, req.nranks, req.root, t);
    const bool isRoot = req.rank == req.root;
    if (!isRoot && needsScratch(links)) {
      plan.scratchElements = std::max(plan.scratchElements, h.count);
    }
    reduceUp(s, links, h, isRoot ? out(h.offset) : scratch(0));
  });
}

}  // namespace loom::detail
