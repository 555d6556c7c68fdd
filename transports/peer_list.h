// The argument check every transport's connect function starts with.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/error.h"

namespace loom {

/// Throws InvalidArgument ("<transport>: ...") unless myRank is in [0,
/// worldSize) and `peers` are distinct ranks of [0, worldSize) other than myRank.
inline void checkPeerList(const char* transport, int myRank, const std::vector<int>& peers,
                          size_t worldSize) {
  if (myRank < 0 || static_cast<size_t>(myRank) >= worldSize) {
    raise(ErrorCode::InvalidArgument, "{}: rank {} outside the {} peer addresses", transport,
          myRank, worldSize);
  }
  std::vector<int> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || static_cast<size_t>(sorted[i]) >= worldSize || sorted[i] == myRank ||
        (i > 0 && sorted[i] == sorted[i - 1])) {
      raise(ErrorCode::InvalidArgument,
            "{}: peer {} of rank {} is invalid (out of [0, {}), itself, or repeated)", transport,
            sorted[i], myRank, worldSize);
    }
  }
}

}  // namespace loom
