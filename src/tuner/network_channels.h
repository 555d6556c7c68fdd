// How many channels (independent link sets) an all-reduce spreads over the
// network. One connection, driven by one thread, moves only so many bytes a
// second (a TCP stream on a 2020s server core: about 3 GB/s), while a NIC may
// carry several times that: channels let several connections fill it. Each
// channel also costs messages and wake-ups, so a message is cut only into
// pieces large enough to pay for themselves.
#pragma once

#include <cstddef>

namespace loom::tuner {

/// What one connection of the tcp (and ucx-over-tcp) transport carries, GB/s.
inline constexpr double kConnectionGBps = 3.0;
/// The smallest piece of an all-reduce worth its own channel (LOOM_CHANNEL_MIN).
inline constexpr size_t kMinChannelBytes = size_t{512} << 10;

/// Channels that fill a network of `networkGBps` with connections of
/// `connectionGBps` each (<= 0: a connection fills any network): at least 1,
/// at most `most`.
int channelsToFill(double networkGBps, double connectionGBps, int most);

/// Of `channels`, how many an all-reduce of `bytes` uses so that no piece is
/// below `minPieceBytes`: at least 1.
int channelsForBytes(int channels, size_t bytes, size_t minPieceBytes);

}  // namespace loom::tuner
