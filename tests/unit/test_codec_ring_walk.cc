// The compressed ring walked with a wire codec (walk_program.h, WireCodec;
// walk_codec.h, codec steps) on host threads, against the host codec's ring
// computed here hop by hop with Int8Codec: every rank's sum bit for bit, on
// one and several channels, through proxies, and with values the codec
// treats specially (zeros, denormals, inf and NaN); and the plan of one hop
// that the rings of other codecs walk between their codec kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/walker/codec_ring_plan.h"
#include "compression/codec.h"
#include "compression/codec_config.h"
#include "core/error.h"
#include "unit/walk_harness.h"

namespace loom::walk {
namespace {

int wrap(int i, int n) { return ((i % n) + n) % n; }

struct RingCase {
  int nranks = 2;
  size_t total = 0;
  uint32_t block = 8;
  bool stochastic = false;
  uint32_t channels = 1;
  std::vector<int> hostOf;  // empty: one host
  int teamSize = 3;
  int lanes = 1;  // threads per group of lanes (a warp on a GPU)
};

/// Slots of 128 bytes: 10 blocks of 8 (4 + 8 bytes each) or 3 of 32 per
/// message, so a chunk of a few hundred elements takes many messages.
FifoGeometry codecGeometry(uint32_t channels) { return tinyGeometry(channels, 128); }

std::vector<std::vector<float>> contributions(int nranks, size_t total, bool special) {
  std::mt19937 rng(static_cast<uint32_t>(total * 31 + static_cast<size_t>(nranks)));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::vector<float>> out(static_cast<size_t>(nranks), std::vector<float>(total));
  for (auto& values : out) {
    for (float& v : values) v = normal(rng);
  }
  if (special && total > 40) {
    out[0][3] = std::numeric_limits<float>::infinity();
    out[1][20] = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 24; i < 32; ++i) out[0][i] = 1e-41f;  // a denormal block (block 8)
    for (auto& values : out) values[33] = 0.0f;
    out[0][34] = -0.0f;
  }
  return out;
}

/// The host ring (src/compressed/compressed_ring.cc) computed chunk by chunk with
/// the host codec: chunk c starts at rank c + 1, and each later rank adds its
/// own values to what it decodes and re-encodes with the next hop's counter.
std::vector<std::vector<float>> hostRing(const RingCase& rc, const CodecConfig& config,
                                         const std::vector<std::vector<float>>& in,
                                         uint64_t counter) {
  const auto codec = makeCodec(config);
  const int n = rc.nranks;
  std::vector<std::vector<float>> sums(static_cast<size_t>(n));
  for (int c = 0; c < n; ++c) {
    const size_t offset = chunkOffset(rc.total, n, c);
    const size_t size = chunkSize(rc.total, n, c);
    std::vector<uint8_t> encoded(codec->encodedBytes(size));
    codec->encode(in[wrap(c + 1, n)].data() + offset, DataType::Float32, size, encoded.data(),
                  encoded.size(), {offset, counter});
    std::vector<float> partial(size);
    for (int hop = 0; hop < n - 1; ++hop) {
      const std::vector<float>& own = in[wrap(c + 2 + hop, n)];
      std::copy_n(own.data() + offset, size, partial.data());
      codec->decodeAccumulate(encoded.data(), encoded.size(), size, partial.data());
      if (hop + 1 < n - 1) {
        codec->encode(partial.data(), DataType::Float32, size, encoded.data(), encoded.size(),
                      {offset, counter + 1 + static_cast<uint64_t>(hop)});
      }
    }
    sums[c] = partial;
  }
  return sums;
}

/// Walks every rank's one part (parts[r]) at once, each as a team of
/// `teamSize` threads in groups of `lanes`, through the proxies when there
/// are any; expects every channel to finish without error.
void walkEveryRank(std::vector<WalkPart>& parts, DataType type, Fifos& fifos, const FifoGeometry& g,
                   int teamSize, int lanes) {
  const int n = static_cast<int>(parts.size());
  std::vector<WalkProgram> programs;
  for (int r = 0; r < n; ++r) {
    WalkLaunch launch;
    launch.rank = r;
    launch.nranks = n;
    launch.type = type;
    launch.timeoutNs = 20'000'000'000ull;
    if (!fifos.proxied.empty()) {
      fifos.proxies[r]->add(proxyMessages({&parts[r], 1}, launch, g, fifos.proxied[r]));
    }
    programs.push_back(placedProgram({&parts[r], 1}, launch, fifos, r));
  }
  std::vector<std::thread> ranks;
  ranks.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] { runProgram(programs[r], type, teamSize, lanes); });
  }
  for (std::thread& t : ranks) t.join();
  for (auto& proxy : fifos.proxies) EXPECT_NO_THROW(proxy->quiesce());
  for (int r = 0; r < n; ++r) {
    const WalkProgram& p = programs[r];
    for (uint32_t ch = 0; ch < p.channels; ++ch) {
      EXPECT_EQ(p.args().status[ch].error, 0u) << "rank " << r << " channel " << ch;
    }
  }
}

/// Every rank walks its ring with the wire codec; returns each rank's sum.
std::vector<std::vector<float>> walkedRing(const RingCase& rc, const CodecConfig& config,
                                           const std::vector<std::vector<float>>& in,
                                           uint64_t counter) {
  const FifoGeometry g = codecGeometry(rc.channels);
  Fifos fifos = rc.hostOf.empty() ? Fifos(g, rc.nranks) : Fifos(g, rc.hostOf);
  const int n = rc.nranks;
  std::vector<RankPlan> plans;
  std::vector<std::vector<float>> sums(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    plans.push_back(codecRingReduceScatterPlan(r, n, rc.total));
    sums[r].assign(chunkSize(rc.total, n, r), -1.0f);
  }
  std::vector<WalkPart> parts(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    parts[r].plan = &plans[r];
    parts[r].input = reinterpret_cast<const char*>(in[r].data());
    parts[r].output = reinterpret_cast<char*>(sums[r].data());
    parts[r].codec = {config.block, config.stochastic, config.seed, counter};
  }
  walkEveryRank(parts, DataType::Float32, fifos, g, rc.teamSize, rc.lanes);
  return sums;
}

void expectRingMatchesHost(const RingCase& rc, bool special = false) {
  const CodecConfig config = int8CodecConfig(rc.block, rc.stochastic, 77);
  const uint64_t counter = 12;
  const auto in = contributions(rc.nranks, rc.total, special);
  const auto want = hostRing(rc, config, in, counter);
  const auto got = walkedRing(rc, config, in, counter);
  for (int r = 0; r < rc.nranks; ++r) {
    ASSERT_EQ(got[r].size(), want[r].size());
    if (want[r].empty()) continue;  // a rank whose chunk is empty (memcmp wants pointers)
    EXPECT_EQ(std::memcmp(got[r].data(), want[r].data(), want[r].size() * sizeof(float)), 0)
        << "rank " << r << " of " << rc.nranks << ", " << rc.total << " elements, block "
        << rc.block << (rc.stochastic ? ", stochastic" : ", nearest") << ", " << rc.channels
        << " channel(s), team " << rc.teamSize << " in groups of " << rc.lanes;
  }
}

TEST(CodecRingWalk, EqualsTheHostRingBitForBit) {
  for (const int nranks : {2, 3, 5}) {
    for (const size_t total : {size_t{1}, size_t{7}, size_t{130}, size_t{1031}}) {
      for (const bool stochastic : {false, true}) {
        expectRingMatchesHost({nranks, total, 8, stochastic, 1, {}});
      }
    }
  }
}

TEST(CodecRingWalk, ChannelsCutOnCodecBlocks) {
  for (const uint32_t channels : {2u, 3u}) {
    for (const uint32_t block : {8u, 32u}) {
      expectRingMatchesHost({4, 1031, block, true, channels, {}});
    }
  }
}

// A GPU encodes each block with a warp, its lanes striding through the block
// and meeting for the absmax: groups of 2, 3 (not a divisor of the block) and
// 4 lanes, one group or several per team, give the host ring's bits.
TEST(CodecRingWalk, LanesOfAGroupShareEachBlock) {
  struct Team {
    int size, lanes;
  };
  for (const Team team : {Team{2, 2}, Team{3, 3}, Team{4, 2}, Team{4, 4}, Team{6, 3}}) {
    for (const size_t total : {size_t{1}, size_t{7}, size_t{130}, size_t{1031}}) {
      for (const uint32_t block : {8u, 32u}) {
        RingCase rc{3, total, block, true, 1, {}};
        rc.teamSize = team.size;
        rc.lanes = team.lanes;
        expectRingMatchesHost(rc);
      }
    }
  }
  RingCase special{3, 200, 8, false, 2, {}};
  special.teamSize = 4;
  special.lanes = 4;
  expectRingMatchesHost(special, true);
  special.stochastic = true;
  expectRingMatchesHost(special, true);
}

// The ring hop by hop (top-k, int8 blocks larger than a slot): one walk of
// ringHopPlan moves each rank's bytes to its right neighbour, on one host and
// through proxies.
TEST(CodecRingWalk, OneHopMovesEachRanksBytesToTheRight) {
  for (const std::vector<int>& hostOf : {std::vector<int>{}, std::vector<int>{0, 0, 1, 1}}) {
    for (const size_t bytes : {size_t{1}, size_t{33}, size_t{1000}}) {
      const int n = 4;
      const FifoGeometry g = tinyGeometry(1);
      Fifos fifos = hostOf.empty() ? Fifos(g, n) : Fifos(g, hostOf);
      std::vector<RankPlan> plans;
      std::vector<std::vector<uint8_t>> sent(n, std::vector<uint8_t>(bytes));
      std::vector<std::vector<uint8_t>> arrived(n, std::vector<uint8_t>(bytes, 0xee));
      for (int r = 0; r < n; ++r) {
        plans.push_back(ringHopPlan(r, n, bytes));
        for (size_t i = 0; i < bytes; ++i) sent[r][i] = static_cast<uint8_t>(r * 31 + i * 7);
      }
      std::vector<WalkPart> parts(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        parts[r].plan = &plans[r];
        parts[r].input = reinterpret_cast<const char*>(sent[r].data());
        parts[r].output = reinterpret_cast<char*>(arrived[r].data());
      }
      walkEveryRank(parts, DataType::Uint8, fifos, g, 2, 1);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(arrived[r], sent[(r + n - 1) % n])
            << "rank " << r << ", " << bytes << " B" << (hostOf.empty() ? "" : ", 2 hosts");
      }
    }
  }
  EXPECT_TRUE(ringHopPlan(0, 1, 10).streams.front().empty());
}

TEST(CodecRingWalk, SpecialValuesRoundAsTheHostCodec) {
  expectRingMatchesHost({3, 200, 8, false, 1, {}}, true);
  expectRingMatchesHost({3, 200, 8, true, 2, {}}, true);
}

TEST(CodecRingWalk, ThroughProxiesAcrossHosts) {
  expectRingMatchesHost({4, 517, 8, true, 1, {0, 0, 1, 1}});
  expectRingMatchesHost({3, 64, 32, false, 1, {0, 1, 2}});
}

TEST(CodecRingWalk, OneRankIsAnEmptyPlan) {
  const RankPlan plan = codecRingReduceScatterPlan(0, 1, 10);
  ASSERT_EQ(plan.streams.size(), 1u);
  EXPECT_TRUE(plan.streams.front().empty());
}

TEST(CodecRingWalk, TheProgramRefusesWhatTheCodecCannotWalk) {
  const FifoGeometry g = codecGeometry(1);
  std::vector<std::vector<uint64_t>> memory(2, std::vector<uint64_t>(ArenaLayout(g, 2).bytes()));
  std::vector<char*> arenas = {reinterpret_cast<char*>(memory[0].data()),
                               reinterpret_cast<char*>(memory[1].data())};
  const RankPlan ring = codecRingReduceScatterPlan(0, 2, 100);
  WalkLaunch launch;
  launch.nranks = 2;
  launch.type = DataType::Float32;
  FifoRoutes routes;
  routes.arenas = arenas;
  // The refusal's code; none when the program was built.
  auto build = [&](const WalkPart& part, DataType type) -> std::optional<ErrorCode> {
    WalkLaunch l = launch;
    l.type = type;
    try {
      buildWalkProgram({&part, 1}, l, g, routes, 0);
    } catch (const Error& e) {
      return e.code();
    }
    return std::nullopt;
  };
  WalkPart part;
  part.plan = &ring;
  part.codec = {8, false, 0, 0};
  EXPECT_EQ(build(part, DataType::Float32), std::nullopt);
  EXPECT_EQ(build(part, DataType::Float16), ErrorCode::InvalidArgument);  // fp32 only
  part.op = ReduceOp::Max;
  EXPECT_EQ(build(part, DataType::Float32), ErrorCode::InvalidArgument);  // sums only
  part.op = ReduceOp::Sum;
  part.codec.block = 128;  // 132 encoded bytes > a 128-byte slot
  EXPECT_EQ(build(part, DataType::Float32), ErrorCode::InvalidArgument);
  part.codec.block = 8;
  RankPlan copy = ring;
  copy.streams.front().back().kind = StepKind::Copy;
  part.plan = &copy;
  EXPECT_EQ(build(part, DataType::Float32), ErrorCode::InvalidArgument);  // not a codec step
  RankPlan twoStreams = ring;
  twoStreams.streams.push_back(ring.streams.front());
  part.plan = &twoStreams;
  EXPECT_EQ(build(part, DataType::Float32), ErrorCode::InvalidArgument);  // one stream only
}

// The walker's own guard: a codec step reached by a walker of another element
// type (a program the builder would not make) stops with BadProgram instead
// of reading its slots as that type.
TEST(CodecRingWalk, TheWalkerRefusesACodecStepOfAnotherType) {
  const FifoGeometry g = codecGeometry(1);
  Fifos fifos(g, 2);
  const RankPlan ring = codecRingReduceScatterPlan(0, 2, 100);
  std::vector<float> input(100, 1.0f);
  std::vector<float> output(50, -1.0f);
  WalkPart part;
  part.plan = &ring;
  part.input = reinterpret_cast<const char*>(input.data());
  part.output = reinterpret_cast<char*>(output.data());
  part.codec = {8, false, 0, 0};
  WalkLaunch launch;
  launch.nranks = 2;
  launch.type = DataType::Float32;
  launch.timeoutNs = 1'000'000'000ull;
  const WalkProgram program = placedProgram({&part, 1}, launch, fifos, 0);
  runProgram(program, DataType::Int32, 2);
  const WalkStatus& status = program.args().status[0];
  EXPECT_EQ(status.error, static_cast<uint32_t>(WalkError::BadProgram));
  EXPECT_EQ(status.step, 0);
  EXPECT_EQ(output, std::vector<float>(50, -1.0f));  // nothing written
}

TEST(CodecRingWalk, MessageSizesAreWholeBlocks) {
  EXPECT_EQ(codecSliceElements(128, 8), 80u);  // 10 x (4 + 8) = 120 <= 128
  EXPECT_EQ(codecSliceElements(128, 128), 0u);
  EXPECT_EQ(codecSliceElements(65536, 256), 64512u);
  EXPECT_EQ(codecMessageBytes(80, 8), 120u);
  EXPECT_EQ(codecMessageBytes(7, 8), 11u);  // one partial block
  EXPECT_EQ(codecMessageBytes(17, 8), 12u + 17u);
}

}  // namespace
}  // namespace loom::walk
