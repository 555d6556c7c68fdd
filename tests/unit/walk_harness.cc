#include "unit/walk_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "collectives/algorithms.h"
#include "collectives/walker/plan_walker.h"
#include "core/error.h"
#include "device/element_types.cuh"
#include "unit/host_team.h"
#include "unit/with_element.h"

namespace loom::walk {

using namespace testing_cases;  // NOLINT(google-build-using-namespace): test vocabulary

Fifos::Fifos(const FifoGeometry& g, int nranks) : geometry(g), layout(g, nranks) {
  for (int r = 0; r < nranks; ++r) {
    memory.emplace_back(layout.bytes() / 8 + 1, 0);
    arenas.push_back(reinterpret_cast<char*>(memory.back().data()));
  }
}

Fifos::Fifos(const FifoGeometry& g, const std::vector<int>& hostOf,
             const std::vector<uint64_t>& reaches)
    : Fifos(g, static_cast<int>(hostOf.size())) {
  const int n = static_cast<int>(hostOf.size());
  proxied =
      proxiedPairs(hostOf, reaches.empty() ? std::vector<uint64_t>(hostOf.size(), ~0ull) : reaches);
  TcpConfig config;
  links = connectAll(n, config, std::vector<uint64_t>(hostOf.size(), 0x5eed));
  for (int r = 0; r < n; ++r) {
    std::vector<Link*> byPeer(hostOf.size(), nullptr);
    for (int p = 0, k = 0; p < n; ++p) {
      if (p == r) continue;
      Link* link = links[r][static_cast<size_t>(k++)].get();
      if (proxied[r][p] != 0) byPeer[p] = link;
    }
    for (std::vector<char*>* boxes : {&outboxes, &inboxes}) {
      memory.emplace_back(layout.bytes() / 8 + 1, 0);
      boxes->push_back(reinterpret_cast<char*>(memory.back().data()));
    }
    proxies.push_back(std::make_unique<WalkProxyRunner>(
        std::make_unique<WalkProxy>(layout, byPeer, outboxes[r], inboxes[r]),
        std::chrono::seconds(20)));
  }
}

FifoGeometry tinyGeometry(uint32_t channels, uint32_t bulkSlotBytes) {
  FifoGeometry g;
  g.channels = channels;
  g.slotCount = 2;
  g.bulkSlotBytes = bulkSlotBytes;
  g.llSlotLines = 8;
  return g;
}

WalkProgram placedProgram(std::span<const WalkPart> parts, const WalkLaunch& launch,
                          const Fifos& fifos, int rank) {
  FifoRoutes routes;
  routes.arenas = fifos.arenas;
  if (!fifos.proxied.empty()) {
    routes.proxied = fifos.proxied[rank];
    routes.outbox = fifos.outboxes[rank];
    routes.inbox = fifos.inboxes[rank];
  }
  WalkProgram p = buildWalkProgram(parts, launch, fifos.geometry, routes, 0);
  const auto base = reinterpret_cast<uintptr_t>(p.words.data());
  const WalkProgram placed = buildWalkProgram(parts, launch, fifos.geometry, routes, base);
  EXPECT_EQ(placed.words.size(), p.words.size());
  std::copy(placed.words.begin(), placed.words.end(), p.words.begin());
  return p;
}

void runProgram(const WalkProgram& program, DataType type, int teamSize, int lanes) {
  const WalkArgs& args = program.args();
  std::vector<std::unique_ptr<HostTeamShared>> teams;
  std::vector<std::thread> threads;
  for (uint32_t ch = 0; ch < args.channelCount; ++ch) {
    teams.push_back(std::make_unique<HostTeamShared>(teamSize, lanes));
    HostTeamShared* shared = teams.back().get();
    for (int t = 0; t < teamSize; ++t) {
      threads.emplace_back([shared, t, &args, ch, type] {
        withElement(type, [&](auto e) {
          HostTeam team(*shared, t);
          PlanWalker<HostTeam, decltype(e)> walker(team, args, ch);
          return walker.run();
        });
      });
    }
  }
  for (std::thread& t : threads) t.join();
}

std::vector<std::vector<WalkStatus>> walkGroup(std::span<const GroupCall> calls,
                                               std::span<World> worlds, Fifos& fifos,
                                               const Options& o,
                                               const std::vector<std::vector<size_t>>& cuts) {
  const int nranks = calls.front().c.nranks;
  // Plans and scratch live until every walk is done.
  std::vector<std::vector<RankPlan>> plans(static_cast<size_t>(nranks));
  std::vector<std::vector<std::vector<char>>> scratch(static_cast<size_t>(nranks));
  std::vector<std::vector<WalkProgram>> programs(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    for (const GroupCall& g : calls) {
      PlanRequest req;
      req.collective = g.c.collective;
      // Calls the chosen algorithm does not implement take their usual one.
      req.algorithm = algorithmSupports(o.algorithm, g.c.collective)
                          ? o.algorithm
                          : usualAlgorithm(g.c.collective);
      req.rank = r;
      req.nranks = nranks;
      req.root = g.c.root;
      req.count = g.c.count;
      req.inPlace = g.c.inPlace;
      plans[r].push_back(makePlan(req));
      scratch[r].emplace_back(plans[r].back().scratchElements * dataTypeSize(g.c.type) + 16, 0);
    }
    std::vector<size_t> sizes = cuts.empty() ? std::vector<size_t>{} : cuts[r];
    if (sizes.empty()) sizes.push_back(calls.size());
    size_t first = 0;
    for (size_t size : sizes) {
      WalkLaunch launch;
      launch.rank = r;
      launch.nranks = nranks;
      launch.type = calls[first].c.type;
      launch.timeoutNs = o.timeoutNs;
      launch.abort = o.abort;
      std::vector<WalkPart> parts;
      for (size_t i = first; i < first + size; ++i) {
        WalkPart part;
        part.plan = &plans[r][i];
        part.op = calls[i].c.op;
        part.protocol = calls[i].protocol;
        part.input = worlds[i].buffers[r].send;
        part.output = worlds[i].buffers[r].recv;
        part.scratch = scratch[r][i].data();
        parts.push_back(part);
      }
      if (!fifos.proxied.empty()) {
        fifos.proxies[r]->add(proxyMessages(parts, launch, fifos.geometry, fifos.proxied[r]));
      }
      programs[r].push_back(placedProgram(parts, launch, fifos, r));
      first += size;
    }
    EXPECT_EQ(first, calls.size()) << "rank " << r << "'s launches cover every call once";
  }
  // Each rank walks its launches one after another, as a stream runs them.
  std::vector<std::thread> ranks;
  for (int r = 0; r < nranks; ++r) {
    if (std::find(o.silentRanks.begin(), o.silentRanks.end(), r) != o.silentRanks.end()) continue;
    ranks.emplace_back([&, r] {
      for (const WalkProgram& program : programs[r]) {
        runProgram(program, static_cast<DataType>(program.args().type), o.teamSize, o.lanes);
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  fifos.proxyErrors.assign(static_cast<size_t>(nranks), "");
  for (size_t r = 0; r < fifos.proxies.size(); ++r) {
    try {
      fifos.proxies[r]->quiesce();
    } catch (const Error& e) {
      fifos.proxyErrors[r] = e.what();
    }
  }
  std::vector<std::vector<WalkStatus>> statuses(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    for (const WalkProgram& p : programs[r]) {
      statuses[r].insert(statuses[r].end(), p.args().status, p.args().status + p.channels);
    }
  }
  return statuses;
}

std::vector<std::vector<WalkStatus>> walkAll(const Case& c, World& w, Fifos& fifos,
                                             const Options& o) {
  const GroupCall call{c, o.protocol};
  return walkGroup({&call, 1}, {&w, 1}, fifos, o, {});
}

bool reducedTestScope() {
  const char* scope = std::getenv("LOOM_TEST_SCOPE");
  return scope != nullptr && std::string(scope) == "reduced";
}

void expectResults(const Case& c, const World& w) {
  for (int r = 0; r < c.nranks; ++r) {
    if (!receives(c, r)) continue;
    const std::vector<char> want = expected(c, r);
    if (want.empty()) continue;
    ASSERT_EQ(std::memcmp(w.buffers[r].recv, want.data(), want.size()), 0) << "rank " << r;
  }
}

void expectClean(const std::vector<std::vector<WalkStatus>>& statuses) {
  for (size_t r = 0; r < statuses.size(); ++r) {
    for (size_t ch = 0; ch < statuses[r].size(); ++ch) {
      ASSERT_EQ(statuses[r][ch].error, 0u)
          << "rank " << r << " channel " << ch << " step " << statuses[r][ch].step << " peer "
          << statuses[r][ch].peer;
    }
  }
}

}  // namespace loom::walk
