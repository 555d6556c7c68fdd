#include "tuner/tree_shape.h"

#include "collectives/algorithms.h"

namespace loom::tuner {

topo::DoubleTreeShape doubleBinaryTreeShape() {
  return [](int index, int count, int tree) {
    const TreeLinks links = doubleBinaryTree(index, count, tree);
    topo::BinaryTreeLinks out;
    out.parent = links.parent;
    out.children[0] = links.children[0];
    out.children[1] = links.children[1];
    return out;
  };
}

}  // namespace loom::tuner
