// Every collective against the independent reference, over launch (threads,
// processes) x transport (shm, tcp) x world size, and inside each of those over
// type x op x count x layout x root (collective_case.cc). One communicator
// serves a whole configuration's cases: creating one per case would cost more
// than the cases themselves.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "collective_case.h"
#include "harness.h"

namespace loomtest {
namespace {

/// Environment variants beyond the default algorithm choice.
enum class Variant {
  Default,
  Ring,  ///< LOOM_ALGO=ring: the ring even where direct would be chosen
  Tree,  ///< LOOM_ALGO=tree
  /// Minimum slot and arena sizes: every mid-size case spans many
  /// slots/rounds; out-of-place direct all-reduce results of any size leave
  /// the arena by non-temporal stores.
  SmallSlots,
  /// SmallSlots' 4 KiB arena rounds, every arena round that peers read
  /// written with streaming stores (all-reduce, all-gather, reduce-scatter,
  /// broadcast's root, reduce's other ranks; LOOM_ARENA_STORES=streaming;
  /// auto, the default, mixes both kinds while it learns, as SmallSlots runs
  /// it).
  StreamingArena,
  /// Single-copy from 4000 B, cross-memory attach allowed (LOOM_CMA=1): the
  /// 1023-element cases of 4- and 8-byte types read peers' buffers in place,
  /// the smaller ones go through the arena, so one communicator crosses the
  /// switch-over in both directions.
  SingleCopy,
  /// The same threshold without cross-memory attach (the default): processes
  /// use the arena (threads of one process still read in place).
  SingleCopyNoCma,
  /// Single-copy from 4000 B, LOOM_TWO_RANK_SUM=whole: two ranks out of place
  /// each sum the whole message themselves (direct_single_copy.cc); in place
  /// they take shards, and below the threshold the arena. (The variants that
  /// leave it `auto` take both ways while the choice warms up.)
  WholeSum,
  /// Every rank's buffers from loomMemAlloc, registered, with WholeSum's
  /// settings: processes map each other's buffers without cross-memory
  /// attach (two ranks out of place sum the whole message, the rest take
  /// shards).
  SharedBuffers,
  /// Only rank 0's buffers shared: every rank finds that out from the
  /// exposure round, and all take the arena.
  SharedBuffersRank0,
  /// Every rank's buffers shared in two cases of three: the arena learns
  /// that they are shared, the next call runs single-copy, the third finds
  /// them private and gives up.
  SharedBuffersAlternate,
  /// Cross-memory attach allowed, only rank 0's buffers shared: in one call
  /// rank 0's are read through mappings and the others' by process_vm_readv.
  SharedBuffersCma,
  /// Three link sets per peer (tcp), pieces of any size, small slots: the
  /// ring all-reduce, all-gather and reduce-scatter run as three independent
  /// rings, every other collective on channel 0 beside them.
  Channels,
};

struct Config {
  Launch launch;
  Transport transport;
  int nranks;
  Coll coll;
  Variant variant;
  Scope scope;
};

std::string variantName(Variant v) {
  switch (v) {
    case Variant::Default:
      return "";
    case Variant::Ring:
      return "_ring";
    case Variant::Tree:
      return "_tree";
    case Variant::SmallSlots:
      return "_smallslots";
    case Variant::StreamingArena:
      return "_streaming_arena";
    case Variant::SingleCopy:
      return "_singlecopy";
    case Variant::SingleCopyNoCma:
      return "_singlecopy_nocma";
    case Variant::WholeSum:
      return "_wholesum";
    case Variant::SharedBuffers:
      return "_shared";
    case Variant::SharedBuffersRank0:
      return "_shared_rank0";
    case Variant::SharedBuffersAlternate:
      return "_shared_alternate";
    case Variant::SharedBuffersCma:
      return "_shared_cma";
    case Variant::Channels:
      return "_channels";
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> variantEnv(Variant v) {
  switch (v) {
    case Variant::Default:
      return {};
    case Variant::Ring:
      // An odd chunk too, so executor slices follow LOOM_CHUNK_SIZE, not slots.
      return {{"LOOM_ALGO", "ring"}, {"LOOM_CHUNK_SIZE", "3000"}};
    case Variant::Tree:
      return {{"LOOM_ALGO", "tree"}};
    case Variant::SmallSlots:
      return {{"LOOM_SHM_SLOT_BYTES", "4K"}, {"LOOM_SHM_SLOTS", "2"},
              {"LOOM_TCP_SLOT_BYTES", "4K"}, {"LOOM_TCP_SLOTS", "2"},
              {"LOOM_DIRECT_BYTES", "4K"},   {"LOOM_DIRECT_ONESHOT", "0"},
              {"LOOM_NONTEMPORAL_MIN", "1"}};
    case Variant::StreamingArena:
      return {{"LOOM_DIRECT_BYTES", "4K"},
              {"LOOM_DIRECT_ONESHOT", "0"},
              {"LOOM_ARENA_STORES", "streaming"}};
    case Variant::SingleCopy:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"}, {"LOOM_CMA", "1"}};
    case Variant::SingleCopyNoCma:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"}, {"LOOM_CMA", "0"}};
    case Variant::WholeSum:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"}, {"LOOM_TWO_RANK_SUM", "whole"}};
    case Variant::SharedBuffers:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"},
              {"LOOM_TWO_RANK_SUM", "whole"},
              {"LOOMTEST_SHARED_BUFFERS", "all"}};
    case Variant::SharedBuffersRank0:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"}, {"LOOMTEST_SHARED_BUFFERS", "rank0"}};
    case Variant::SharedBuffersAlternate:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"}, {"LOOMTEST_SHARED_BUFFERS", "alternate"}};
    case Variant::SharedBuffersCma:
      return {{"LOOM_SINGLE_COPY_MIN", "4000"},
              {"LOOM_TWO_RANK_SUM", "whole"},
              {"LOOM_CMA", "1"},
              {"LOOMTEST_SHARED_BUFFERS", "rank0"}};
    case Variant::Channels:
      return {{"LOOM_ALGO", "ring"},
              {"LOOM_NCHANNELS", "3"},
              {"LOOM_CHANNEL_MIN", "1"},
              {"LOOM_TCP_SLOT_BYTES", "4K"}};
  }
  return {};
}

std::string configName(const testing::TestParamInfo<Config>& info) {
  const Config& c = info.param;
  return std::string(launchName(c.launch)) + "_" + transportName(c.transport) + "_n" +
         std::to_string(c.nranks) + "_" + collName(c.coll) + variantName(c.variant);
}

/// Readable parameters in gtest's output and test listing.
void PrintTo(const Config& c, std::ostream* os) {
  *os << launchName(c.launch) << " " << transportName(c.transport) << " n=" << c.nranks << " "
      << collName(c.coll) << variantName(c.variant);
}

std::vector<Config> configs(Launch launch, Transport transport, std::vector<int> sizes,
                            std::vector<Coll> colls, Variant variant, Scope scope) {
  std::vector<Config> out;
  for (int n : sizes) {
    for (Coll coll : colls) out.push_back({launch, transport, n, coll, variant, scope});
  }
  return out;
}

const std::vector<Coll> kAll = {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter,
                                Coll::Broadcast, Coll::Reduce,    Coll::AllToAll,
                                Coll::Gather,    Coll::Scatter,   Coll::SendRecv};
const std::vector<Coll> kRingCapable = {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter,
                                        Coll::Broadcast, Coll::Reduce};
const std::vector<Coll> kTreeCapable = {Coll::AllReduce, Coll::Broadcast, Coll::Reduce};
/// What runs on several channels, and what learns its arena stores.
const std::vector<Coll> kChannelCapable = {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter};
/// What the direct algorithm runs, and so what single-copy rounds serve.
const std::vector<Coll> kDirectCapable = kRingCapable;

/// The first few failing cases are enough to debug; the rest are counted.
constexpr int kErrorsShown = 5;

RankOutcome runAllCases(const std::vector<Case>& cases, int rank, int nranks, loomComm_t comm) {
  RankOutcome out;
  int count = -1;
  int me = -1;
  if (loomCommCount(comm, &count) != loomSuccess || count != nranks) {
    out.error += "loomCommCount gave " + std::to_string(count) + "\n";
  }
  if (loomCommUserRank(comm, &me) != loomSuccess || me != rank) {
    out.error += "loomCommUserRank gave " + std::to_string(me) + "\n";
  }
  int errors = 0;
  for (const Case& c : cases) {
    CaseResult r = runCase(c, rank, nranks, comm);
    out.report += r.report;
    if (!r.error.empty() && errors++ < kErrorsShown) out.error += r.error + "\n";
    if (r.fatal) {
      // Peers may now wait for a call this rank will not make: stop here and
      // let LOOM_TIMEOUT end their wait.
      out.error += "stopped after the failed call\n";
      break;
    }
  }
  if (errors > kErrorsShown) {
    out.error += "... and " + std::to_string(errors - kErrorsShown) + " more failing cases\n";
  }
  return out;
}

class Collectives : public testing::TestWithParam<Config> {};

TEST_P(Collectives, MatchReference) {
  const Config& cfg = GetParam();
  const std::vector<Case> cases = makeCases(cfg.coll, cfg.nranks, cfg.scope);
  RunOptions options;
  options.launch = cfg.launch;
  options.transport = cfg.transport;
  options.nranks = cfg.nranks;
  options.env = variantEnv(cfg.variant);
  const auto results = runRanks(options, [&](int rank, int nranks, loomComm_t comm) {
    return runAllCases(cases, rank, nranks, comm);
  });
  EXPECT_EQ(failures(results), "") << cases.size() << " cases per rank";
  // Exact cases equal the reference on every rank already; this catches the
  // random-real ones, where each rank passing its tolerance is not enough:
  // every rank must hold the same bytes. Only comparable if all ranks got
  // through every case.
  bool allReported = true;
  for (const auto& r : results) allReported = allReported && r.reported;
  if (cfg.coll == Coll::AllReduce && allReported) {
    EXPECT_EQ(reportMismatch(results), "");
  }
}

INSTANTIATE_TEST_SUITE_P(ThreadsShm, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Shm, {1, 2, 3, 4, 8},
                                                   kAll, Variant::Default, Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(ThreadsTcp, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Tcp, {2, 3, 4, 8},
                                                   kAll, Variant::Default, Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(ProcessesShm, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {2, 3, 8},
                                                   kAll, Variant::Default, Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(ProcessesTcp, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Tcp, {2, 3}, kAll,
                                                   Variant::Default, Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(Ring, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Shm, {2, 3, 5},
                                                   kRingCapable, Variant::Ring, Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(Tree, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Shm, {3, 4, 8},
                                                   kTreeCapable, Variant::Tree, Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SmallSlotsShm, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Shm, {3, 4}, kAll,
                                                   Variant::SmallSlots, Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(StreamingArena, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {2, 3, 4},
                                                   kChannelCapable, Variant::StreamingArena,
                                                   Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SingleCopyThreads, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Shm, {2, 3, 5, 8},
                                                   kDirectCapable, Variant::SingleCopy,
                                                   Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SingleCopyProcesses, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {2, 3, 4},
                                                   kDirectCapable, Variant::SingleCopy,
                                                   Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(WholeSumThreads, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Shm, {2, 3},
                                                   {Coll::AllReduce}, Variant::WholeSum,
                                                   Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SharedBuffers, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {2, 3, 4},
                                                   kDirectCapable, Variant::SharedBuffers,
                                                   Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SharedBuffersRank0, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {3},
                                                   kDirectCapable, Variant::SharedBuffersRank0,
                                                   Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SharedBuffersAlternate, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {2, 3},
                                                   kDirectCapable, Variant::SharedBuffersAlternate,
                                                   Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SharedBuffersCma, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {2, 3},
                                                   kDirectCapable, Variant::SharedBuffersCma,
                                                   Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SingleCopyNoCma, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Shm, {3},
                                                   kDirectCapable, Variant::SingleCopyNoCma,
                                                   Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(ChannelsTcp, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Tcp, {2, 3, 5},
                                                   kChannelCapable, Variant::Channels,
                                                   Scope::Full)),
                         configName);

INSTANTIATE_TEST_SUITE_P(ChannelsBeside, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Tcp, {3}, kAll,
                                                   Variant::Channels, Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(ChannelsProcesses, Collectives,
                         testing::ValuesIn(configs(Launch::Processes, Transport::Tcp, {3},
                                                   kChannelCapable, Variant::Channels,
                                                   Scope::Reduced)),
                         configName);

INSTANTIATE_TEST_SUITE_P(SmallSlotsTcp, Collectives,
                         testing::ValuesIn(configs(Launch::Threads, Transport::Tcp, {3}, kAll,
                                                   Variant::SmallSlots, Scope::Reduced)),
                         configName);

}  // namespace
}  // namespace loomtest
