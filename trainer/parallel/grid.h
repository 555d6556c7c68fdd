// The rank grid: world rank = (pp * dp_size + dp) * tp_size + tp. Tensor
// parallelism is innermost because it talks most (four all-reduces per block per
// micro-batch) and neighbouring ranks are the closest; pipeline outermost
// because it talks least.
#pragma once

#include <loom/loom.h>

#include "parallel/group_comm.h"

namespace loom::train {

struct GridShape {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int size() const { return dp * tp * pp; }
};

/// A rank's coordinates in the grid.
struct GridCoords {
  int dp = 0;
  int tp = 0;
  int pp = 0;
};

GridCoords coordsOf(const GridShape& shape, int worldRank);
int worldRankOf(const GridShape& shape, const GridCoords& coords);

/// This rank's groups, split from the world communicator (collective: every
/// rank of `world` constructs its grid together).
class ParallelGrid {
 public:
  ParallelGrid(loomComm_t world, const GridShape& shape, CommClock* clock);

  const GridShape& shape() const { return shape_; }
  const GridCoords& coords() const { return coords_; }
  GroupComm& world() { return world_; }
  GroupComm& tensor() { return tensor_; }
  GroupComm& data() { return data_; }
  GroupComm& pipeline() { return pipeline_; }
  /// First and last pipeline stage of one (dp, tp) position: sums the tied
  /// embedding's gradient. Size 1 (no calls) when pp == 1 or on middle stages.
  GroupComm& embedding() { return embedding_; }
  /// Bytes sent on all groups so far.
  uint64_t bytesSent() const;
  /// Revokes every group (GroupComm::revoke).
  void revokeAll();

 private:
  GridShape shape_;
  GridCoords coords_;
  GroupComm world_, tensor_, data_, pipeline_, embedding_;
};

}  // namespace loom::train
