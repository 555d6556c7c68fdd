// Double binary tree construction.
//
// Each tree is an in-order binary tree over labels 1..n: label x with lowest
// set bit b has children x-b/2 and x+b/2, so odd labels are leaves and every
// even label has at least its left child. Labels above n are cut out by
// letting a node adopt the nearest in-range node of a missing subtree.
//
// Tree 0 gives rank r label r+1 (interior ranks are odd); tree 1 gives rank r
// label r, rank 0 label n (interior ranks are even, rank 0 only when n is
// even). So no rank is interior in both trees, and each rank forwards data
// for at most one half of the message: the point of using two trees.
#include <bit>

#include "collectives/algorithms.h"
#include "collectives/algorithms/families.h"
#include "core/error.h"

namespace loom {
namespace {

int lowBit(int x) { return x & -x; }

// Root of the in-order tree over 1..n: the largest power of two <= n.
int topLabel(int n) { return static_cast<int>(std::bit_floor(static_cast<unsigned>(n))); }

int parentLabel(int x, int n) {
  if (x == topLabel(n)) return -1;
  int p = x;
  do {
    const int b = lowBit(p);
    p = (p | (b << 1)) & ~b;  // one level up in the unbounded tree
  } while (p > n);
  return p;
}

// The in-range root of the subtree whose full-tree root is `x` with lowest bit
// `b`, or -1 when every label in it exceeds n.
int inRangeTop(int x, int b, int n) {
  while (x > n) {
    if (b == 1) return -1;
    b >>= 1;
    x -= b;  // the left child keeps the smallest labels
  }
  return x;
}

int labelOf(int rank, int n, int tree) { return tree == 0 ? rank + 1 : (rank == 0 ? n : rank); }
int rankOf(int label, int n, int tree) { return tree == 0 ? label - 1 : label % n; }

}  // namespace

TreeLinks doubleBinaryTree(int rank, int nranks, int tree) {
  if (nranks < 1 || rank < 0 || rank >= nranks || (tree != 0 && tree != 1)) {
    raise(ErrorCode::InvalidArgument, "no rank {} in tree {} of a {}-rank double binary tree", rank,
          tree, nranks);
  }
  const int x = labelOf(rank, nranks, tree);
  TreeLinks links;
  const int parent = parentLabel(x, nranks);
  if (parent > 0) links.parent = rankOf(parent, nranks, tree);
  const int b = lowBit(x);
  if (b > 1) {
    links.children[0] = rankOf(x - b / 2, nranks, tree);
    const int right = inRangeTop(x + b / 2, b / 2, nranks);
    if (right > 0) links.children[1] = rankOf(right, nranks, tree);
  }
  return links;
}

namespace detail {

TreeLinks rootedDoubleBinaryTree(int rank, int nranks, int root, int tree) {
  TreeLinks links;
  if (nranks == 1) return links;
  // Virtual index of the other ranks, starting after the root.
  const int others = nranks - 1;
  auto toRank = [&](int v) { return v < 0 ? -1 : (v + root + 1) % nranks; };
  if (rank == root) {
    links.children[0] = toRank(rankOf(topLabel(others), others, tree));
    return links;
  }
  const int v = (rank - root - 1 + nranks) % nranks;
  const TreeLinks inner = doubleBinaryTree(v, others, tree);
  links.parent = inner.parent < 0 ? root : toRank(inner.parent);
  links.children[0] = toRank(inner.children[0]);
  links.children[1] = toRank(inner.children[1]);
  return links;
}

}  // namespace detail
}  // namespace loom
