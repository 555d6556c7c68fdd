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

std::vector<std::vector<WalkStatus>> walkAll(const Case& c, World& w, Fifos& fifos,
                                             const Options& o) {
  const size_t es = dataTypeSize(c.type);
  std::vector<std::vector<char>> scratch(static_cast<size_t>(c.nranks));
  std::vector<WalkProgram> programs;
  for (int r = 0; r < c.nranks; ++r) {
    PlanRequest req;
    req.collective = c.collective;
    req.algorithm = o.algorithm;
    req.rank = r;
    req.nranks = c.nranks;
    req.root = c.root;
    req.count = c.count;
    req.inPlace = c.inPlace;
    const RankPlan plan = makePlan(req);
    scratch[r].assign(plan.scratchElements * es + 16, 0);
    WalkCall call;
    call.rank = r;
    call.nranks = c.nranks;
    call.type = c.type;
    call.op = c.op;
    call.protocol = o.protocol;
    call.input = w.buffers[r].send;
    call.output = w.buffers[r].recv;
    call.scratch = scratch[r].data();
    call.timeoutNs = o.timeoutNs;
    call.abort = o.abort;
    FifoRoutes routes;
    routes.arenas = fifos.arenas;
    if (!fifos.proxied.empty()) {
      routes.proxied = fifos.proxied[r];
      routes.outbox = fifos.outboxes[r];
      routes.inbox = fifos.inboxes[r];
      fifos.proxies[r]->add(proxyMessages(plan, call, fifos.geometry, fifos.proxied[r]));
    }
    // Built for where it will sit: a second build at the storage's address.
    WalkProgram p = buildWalkProgram(plan, call, fifos.geometry, routes, 0);
    const auto base = reinterpret_cast<uintptr_t>(p.words.data());
    const WalkProgram placed = buildWalkProgram(plan, call, fifos.geometry, routes, base);
    EXPECT_EQ(placed.words.size(), p.words.size());
    std::copy(placed.words.begin(), placed.words.end(), p.words.begin());
    programs.push_back(std::move(p));
  }
  std::vector<std::unique_ptr<HostTeamShared>> teams;
  std::vector<std::thread> threads;
  for (int r = 0; r < c.nranks; ++r) {
    if (std::find(o.silentRanks.begin(), o.silentRanks.end(), r) != o.silentRanks.end()) continue;
    const WalkArgs& args = programs[r].args();
    for (uint32_t ch = 0; ch < args.channelCount; ++ch) {
      teams.push_back(std::make_unique<HostTeamShared>(o.teamSize));
      HostTeamShared* shared = teams.back().get();
      for (int t = 0; t < o.teamSize; ++t) {
        threads.emplace_back([shared, t, &args, ch, type = c.type] {
          withElement(type, [&](auto e) {
            HostTeam team(*shared, t);
            PlanWalker<HostTeam, decltype(e)> walker(team, args, ch);
            return walker.run();
          });
        });
      }
    }
  }
  for (std::thread& t : threads) t.join();
  fifos.proxyErrors.assign(static_cast<size_t>(c.nranks), "");
  for (size_t r = 0; r < fifos.proxies.size(); ++r) {
    try {
      fifos.proxies[r]->quiesce();
    } catch (const Error& e) {
      fifos.proxyErrors[r] = e.what();
    }
  }
  std::vector<std::vector<WalkStatus>> statuses;
  statuses.reserve(programs.size());
  for (const WalkProgram& p : programs) {
    statuses.emplace_back(p.args().status, p.args().status + p.channels);
  }
  return statuses;
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
