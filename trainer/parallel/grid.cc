#include "parallel/grid.h"

#include <stdexcept>
#include <string>

namespace loom::train {

GridCoords coordsOf(const GridShape& shape, int worldRank) {
  GridCoords c;
  c.tp = worldRank % shape.tp;
  c.dp = (worldRank / shape.tp) % shape.dp;
  c.pp = worldRank / (shape.tp * shape.dp);
  return c;
}

int worldRankOf(const GridShape& shape, const GridCoords& c) {
  return (c.pp * shape.dp + c.dp) * shape.tp + c.tp;
}

namespace {

GroupComm split(loomComm_t world, int color, int key, CommClock* clock) {
  loomComm_t raw = nullptr;
  loom::check(loomCommSplit(world, color, key, &raw));
  if (raw == nullptr) return GroupComm();  // LOOM_SPLIT_NOCOLOR: a group of one
  return GroupComm(loom::Comm(raw), clock);
}

}  // namespace

ParallelGrid::ParallelGrid(loomComm_t world, const GridShape& shape, CommClock* clock)
    : shape_(shape) {
  int rank = 0, size = 0;
  loom::check(loomCommUserRank(world, &rank));
  loom::check(loomCommCount(world, &size));
  if (size != shape.size()) {
    throw std::invalid_argument("grid " + std::to_string(shape.dp) + "x" +
                                std::to_string(shape.tp) + "x" + std::to_string(shape.pp) +
                                " needs " + std::to_string(shape.size()) + " ranks, world has " +
                                std::to_string(size));
  }
  coords_ = coordsOf(shape, rank);
  const GridCoords& c = coords_;
  // Every rank makes the same splits in the same order (each is collective).
  world_ = split(world, 0, rank, clock);
  tensor_ = split(world, c.pp * shape.dp + c.dp, c.tp, clock);
  data_ = split(world, c.pp * shape.tp + c.tp, c.dp, clock);
  pipeline_ = split(world, c.dp * shape.tp + c.tp, c.pp, clock);
  const bool holdsEmbedding = shape.pp > 1 && (c.pp == 0 || c.pp == shape.pp - 1);
  embedding_ =
      split(world, holdsEmbedding ? c.dp * shape.tp + c.tp : LOOM_SPLIT_NOCOLOR, c.pp, clock);
}

void ParallelGrid::revokeAll() {
  for (GroupComm* group : {&world_, &tensor_, &data_, &pipeline_, &embedding_}) group->revoke();
}

uint64_t ParallelGrid::bytesSent() const {
  return world_.bytesSent() + tensor_.bytesSent() + data_.bytesSent() + pipeline_.bytesSent() +
         embedding_.bytesSent();
}

}  // namespace loom::train
