// The rule that sets how many channels an all-reduce spreads over the network.
#include <gtest/gtest.h>

#include "tuner/network_channels.h"

namespace loom::tuner {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(NetworkChannels, EnoughConnectionsToFillTheNetwork) {
  EXPECT_EQ(channelsToFill(1.25, 3.0, 8), 1);  // 10 GbE: one connection fills it
  EXPECT_EQ(channelsToFill(3.0, 3.0, 8), 1);   // exactly one connection's worth
  EXPECT_EQ(channelsToFill(3.1, 3.0, 8), 2);
  EXPECT_EQ(channelsToFill(12.5, 3.0, 8), 5);  // 100 GbE
  EXPECT_EQ(channelsToFill(50.0, 3.0, 8), 8);  // 400 GbE: capped
  EXPECT_EQ(channelsToFill(50.0, 3.0, 3), 3);
  EXPECT_EQ(channelsToFill(50.0, 0.0, 8), 1);  // a connection fills anything (verbs)
  EXPECT_EQ(channelsToFill(50.0, -1.0, 8), 1);
  EXPECT_EQ(channelsToFill(12.5, 3.0, 0), 1);  // nothing connected beyond channel 0
}

TEST(NetworkChannels, NoPieceBelowTheMinimum) {
  const size_t min = 512 * 1024;
  EXPECT_EQ(channelsForBytes(4, 0, min), 1);
  EXPECT_EQ(channelsForBytes(4, 8, min), 1);
  EXPECT_EQ(channelsForBytes(4, min - 1, min), 1);
  EXPECT_EQ(channelsForBytes(4, 2 * min, min), 2);
  EXPECT_EQ(channelsForBytes(4, 2 * min + 1, min), 2);
  EXPECT_EQ(channelsForBytes(4, 64 * kMiB, min), 4);
  EXPECT_EQ(channelsForBytes(1, 64 * kMiB, min), 1);
  EXPECT_EQ(channelsForBytes(0, 64 * kMiB, min), 1);
  EXPECT_EQ(channelsForBytes(3, 5, 1), 3);  // LOOM_CHANNEL_MIN=1: any piece
  EXPECT_EQ(channelsForBytes(3, 5, 0), 3);  // a zero minimum reads as one byte
}

}  // namespace
}  // namespace loom::tuner
