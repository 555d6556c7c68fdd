#include "collectives/algorithms.h"
#include "core/error.h"

namespace loom {
namespace {

void checkPiece(int parts, int i) {
  if (parts < 1 || i < 0 || i >= parts) {
    raise(ErrorCode::InvalidArgument, "chunk {} of {} parts does not exist", i, parts);
  }
}

}  // namespace

size_t chunkOffset(size_t count, int parts, int i) {
  checkPiece(parts, i);
  const size_t base = count / static_cast<size_t>(parts);
  const size_t extra = count % static_cast<size_t>(parts);
  const size_t index = static_cast<size_t>(i);
  // The first `extra` pieces hold one element more.
  return index * base + (index < extra ? index : extra);
}

size_t chunkSize(size_t count, int parts, int i) {
  checkPiece(parts, i);
  const size_t base = count / static_cast<size_t>(parts);
  const size_t extra = count % static_cast<size_t>(parts);
  return base + (static_cast<size_t>(i) < extra ? 1 : 0);
}

}  // namespace loom
