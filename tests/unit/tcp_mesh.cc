#include "unit/tcp_mesh.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"

namespace loom {

Digest sharedTestKey() { return sha256("tcp mesh test key", {}); }

std::vector<Links> connectAll(int nranks, const TcpConfig& config, std::vector<uint64_t> tags,
                              std::vector<std::string>* errors, std::chrono::milliseconds timeout,
                              const std::vector<Digest>& keys) {
  std::vector<std::unique_ptr<TcpListener>> listeners;
  std::vector<std::string> addresses;
  for (int r = 0; r < nranks; ++r) {
    listeners.push_back(std::make_unique<TcpListener>("127.0.0.1"));
    addresses.push_back(listeners.back()->address());
  }
  std::vector<Links> links(nranks);
  std::vector<std::string> failures(nranks);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      std::vector<int> peers;
      for (int p = 0; p < nranks; ++p) {
        if (p != r) peers.push_back(p);
      }
      try {
        const LinkCredentials credentials{tags[r], keys.empty() ? sharedTestKey() : keys[r]};
        links[r] = connectTcpLinks(
            *listeners[r], {r, peers, addresses, credentials, Deadline::after(timeout)}, config);
      } catch (const Error& e) {
        failures[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (errors != nullptr) {
    *errors = failures;
  } else {
    for (int r = 0; r < nranks; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
  }
  return links;
}

}  // namespace loom
