// Runs every rank's walk (collectives/walker/) on host threads: the harness of
// the walker tests. Ranks may be split into "hosts": peers on another host are
// reached through each rank's proxy (walk_proxy.h) over real TCP links.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/walker/walk_program.h"
#include "collectives/walker/walk_proxy.h"
#include "device_paths/walk_proxy_runner.h"
#include "unit/collective_cases.h"
#include "unit/tcp_mesh.h"

namespace loom::walk {

/// Every rank's arena (and, across hosts, its outbox, inbox, links and
/// proxy), zeroed once and kept across calls like a communicator's.
struct Fifos {
  Fifos(const FifoGeometry& g, int nranks);
  /// hostOf[r]: rank r's host; ranks on different hosts talk through proxies,
  /// and so do ranks of one host unless both can write to each other (bit p
  /// of reaches[r]; empty: every rank reaches every other), as proxiedPairs
  /// decides for a communicator.
  Fifos(const FifoGeometry& g, const std::vector<int>& hostOf,
        const std::vector<uint64_t>& reaches = {});
  FifoGeometry geometry;
  ArenaLayout layout;
  std::vector<std::vector<uint64_t>> memory;
  std::vector<char*> arenas;
  // Across hosts only:
  std::vector<std::vector<uint8_t>> proxied;  // per rank, per peer
  std::vector<char*> outboxes, inboxes;
  std::vector<Links> links;
  // Each rank's proxy on its own thread, as a communicator runs it.
  std::vector<std::unique_ptr<WalkProxyRunner>> proxies;
  std::vector<std::string> proxyErrors;  // of the last walk, per rank
};

/// Small FIFOs: 2 slots of `bulkSlotBytes` (32: a 1031-element call is
/// dozens of messages per step and every slot is reused), or 2 x 16 payload
/// bytes of lines.
FifoGeometry tinyGeometry(uint32_t channels, uint32_t bulkSlotBytes = 32);

struct Options {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Bulk;
  int teamSize = 2;
  int lanes = 1;                           // threads per group of lanes (a warp); divides teamSize
  uint64_t timeoutNs = 20'000'000'000ull;  // generous: ranks outnumber cores
  std::vector<int> silentRanks;            // ranks that never start
  const volatile uint32_t* abort = nullptr;
};

/// One walk of every rank's program on host threads; returns each rank's
/// statuses (one per channel).
std::vector<std::vector<WalkStatus>> walkAll(const testing_cases::Case& c, testing_cases::World& w,
                                             Fifos& fifos, const Options& o);

/// `rank`'s program for `parts`, built for the address where it sits.
WalkProgram placedProgram(std::span<const WalkPart> parts, const WalkLaunch& launch,
                          const Fifos& fifos, int rank);
/// Walks one program as a launch does: a team per channel, all at once, its
/// threads in groups of `lanes`.
void runProgram(const WalkProgram& program, DataType type, int teamSize, int lanes = 1);

/// One call of a group, with the protocol its walk takes.
struct GroupCall {
  testing_cases::Case c;
  Protocol protocol = Protocol::Bulk;
};

/// A group of calls (one world each, one element type per launch) walked by
/// every rank: rank r cuts it into launches of cuts[r] calls each, walked one
/// after another (empty: the whole group is one launch); ranks may cut it
/// differently. Returns each rank's statuses, launch after launch. Uses
/// o.algorithm, o.teamSize, o.timeoutNs, o.silentRanks and o.abort.
std::vector<std::vector<WalkStatus>> walkGroup(std::span<const GroupCall> calls,
                                               std::span<testing_cases::World> worlds, Fifos& fifos,
                                               const Options& o,
                                               const std::vector<std::vector<size_t>>& cuts);

/// LOOM_TEST_SCOPE=reduced (make test-tsan): races do not depend on world
/// sizes or layouts, and TSan makes each of thousands of threads costly.
bool reducedTestScope();

/// Every receiving rank's buffer equals the reference.
void expectResults(const testing_cases::Case& c, const testing_cases::World& w);
/// No channel of any rank failed.
void expectClean(const std::vector<std::vector<WalkStatus>>& statuses);

}  // namespace loom::walk
