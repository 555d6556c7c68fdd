// Real rendezvous servers and ranks for the bootstrap tests, in one process.
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace loom::fixture {

/// A rendezvous server on loopback.
inline UniqueId loopbackServer() {
  RendezvousOptions options;
  options.bindHost = "127.0.0.1";
  return startRendezvous(options);
}

/// Joins `nranks` ranks concurrently and returns them, indexed by rank.
inline std::vector<std::unique_ptr<Bootstrap>> joinAll(const UniqueId& id, int nranks) {
  std::vector<std::unique_ptr<Bootstrap>> boots(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      boots[static_cast<size_t>(r)] =
          Bootstrap::join(id, r, nranks, Deadline::after(std::chrono::seconds(5)));
    });
  }
  for (auto& t : threads) t.join();
  return boots;
}

}  // namespace loom::fixture
