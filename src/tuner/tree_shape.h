// The double binary tree of collectives/algorithms as the shape topology's
// tree search builds its host trees with, so both use one construction.
#pragma once

#include "topology/tree_search.h"

namespace loom::tuner {

/// collectives' doubleBinaryTree as a topo::DoubleTreeShape.
topo::DoubleTreeShape doubleBinaryTreeShape();

}  // namespace loom::tuner
