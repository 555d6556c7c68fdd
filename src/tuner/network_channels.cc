#include "tuner/network_channels.h"

#include <algorithm>
#include <cmath>

namespace loom::tuner {

int channelsToFill(double networkGBps, double connectionGBps, int most) {
  if (most < 1 || connectionGBps <= 0.0 || networkGBps <= connectionGBps) return 1;
  const double wanted = std::ceil(networkGBps / connectionGBps);
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(most)));
}

int channelsForBytes(int channels, size_t bytes, size_t minPieceBytes) {
  if (channels <= 1) return 1;
  const size_t pieces = bytes / std::max<size_t>(minPieceBytes, 1);
  return static_cast<int>(std::clamp<size_t>(pieces, 1, static_cast<size_t>(channels)));
}

}  // namespace loom::tuner
