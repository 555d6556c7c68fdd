// The rendezvous handshake proves the secret without sending it: strangers,
// ranks of another job, replayed and sniffed hellos are refused, and the real
// ranks of the job go on unharmed.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "core/error.h"
#include "core/socket.h"
#include "tests/unit/bootstrap_fixture.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

using JoinRank0 = std::function<std::unique_ptr<Bootstrap>()>;

// Ranks of `id` join (rank 0 by `joinRank0` when given) and all-gather once;
// returns the first failure.
std::string runWorld(const UniqueId& id, int nranks, const JoinRank0& joinRank0 = {}) {
  std::vector<std::unique_ptr<Bootstrap>> boots(static_cast<size_t>(nranks));
  std::vector<std::string> failures(static_cast<size_t>(nranks));
  auto each = [&](auto body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      threads.emplace_back([&, r] {
        try {
          body(r);
        } catch (const std::exception& e) {
          failures[r] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& f : failures) {
      if (!f.empty()) return f;
    }
    return std::string();
  };
  const std::string joinFailure = each([&](int r) {
    boots[r] =
        r == 0 && joinRank0 ? joinRank0() : Bootstrap::join(id, r, nranks, Deadline::after(5s));
    if (!boots[r]) throw Error(ErrorCode::InternalError, "rank 0 did not join");
  });
  if (!joinFailure.empty()) return joinFailure;
  return each([&](int r) {
    const auto all = boots[r]->allGather(std::to_string(r), Deadline::after(5s));
    for (int p = 0; p < nranks; ++p) {
      if (all[p] != std::to_string(p))
        throw Error(ErrorCode::InternalError, "wrong blob " + all[p]);
    }
  });
}

// Joins as `rank` of `nranks` with `id` and returns the refusal.
Error refusalOf(const UniqueId& id, int rank, int nranks) {
  try {
    Bootstrap::join(id, rank, nranks, Deadline::after(3s));
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorCode::InternalError, "joined although it should have been refused");
}

TEST(BootstrapAuth, WrongSecretIsRefusedReadablyAndTheJobGoesOn) {
  const UniqueId id = fixture::loopbackServer();
  UniqueId stranger = id;
  stranger.secret[15] ^= 1;
  const Error refused = refusalOf(stranger, 0, 2);
  EXPECT_EQ(refused.code(), ErrorCode::InvalidUsage);
  EXPECT_NE(std::string(refused.what()).find("does not prove the secret"), std::string::npos)
      << refused.what();
  EXPECT_EQ(runWorld(id, 2), "");
}

TEST(BootstrapAuth, RankOfAnotherJobIsRefusedByName) {
  const UniqueId id = fixture::loopbackServer();
  UniqueId otherJob = id;  // same address and secret, as with a shared LOOM_SECRET
  otherJob.job ^= 0x10;
  const Error refused = refusalOf(otherJob, 1, 2);
  EXPECT_EQ(refused.code(), ErrorCode::InvalidUsage);
  EXPECT_NE(std::string(refused.what()).find("another job"), std::string::npos) << refused.what();
  EXPECT_EQ(runWorld(id, 2), "");
}

// Relays one connection between a client and the server and records what
// the client sent, as an eavesdropper on the network would see it.
class Eavesdropper {
 public:
  explicit Eavesdropper(const UniqueId& server)
      : listener_(listenTcp("127.0.0.1", 0)), server_(server) {
    relayed_ = server;
    relayed_.port = SocketAddress::local(listener_.fd()).port();
    thread_ = std::thread([this] { relay(); });
  }
  ~Eavesdropper() {
    stop_ = true;
    thread_.join();
  }
  /// The id a client uses to go through the relay.
  const UniqueId& relayedId() const { return relayed_; }
  std::string sniffed() {
    std::lock_guard lock(mu_);
    return sniffed_;
  }

 private:
  void relay() {
    const Deadline deadline = Deadline::after(10s);
    Socket client;
    while (!stop_ && !client.valid() && !deadline.expired()) {
      pollfd ready{listener_.fd(), POLLIN, 0};
      if (::poll(&ready, 1, 20) == 1)
        client = Socket(::accept4(listener_.fd(), nullptr, nullptr, 0));
    }
    if (!client.valid()) return;
    Socket server = connectWithRetry(SocketAddress::fromHost(server_.host, server_.port),
                                     Deadline::after(3s), nullptr);
    char chunk[4096];
    while (!stop_) {
      pollfd fds[2] = {{client.fd(), POLLIN, 0}, {server.fd(), POLLIN, 0}};
      if (::poll(fds, 2, 20) <= 0) continue;
      for (int side = 0; side < 2; ++side) {
        if (fds[side].revents == 0) continue;
        const int from = side == 0 ? client.fd() : server.fd();
        const int to = side == 0 ? server.fd() : client.fd();
        const ssize_t n = ::recv(from, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        if (side == 0) {
          std::lock_guard lock(mu_);
          sniffed_.append(chunk, static_cast<size_t>(n));
        }
        if (::send(to, chunk, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return;
      }
    }
  }

  Socket listener_;
  UniqueId server_;
  UniqueId relayed_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string sniffed_;
  std::thread thread_;
};

TEST(BootstrapAuth, SniffedHandshakeHoldsNoSecretAndCannotBeReplayed) {
  const UniqueId id = fixture::loopbackServer();
  Eavesdropper eve(id);
  // Rank 0 joins through the relay; the world is not complete yet, so the
  // server still listens when the replay comes.
  std::unique_ptr<Bootstrap> rank0;
  std::string rank0Failure;
  std::thread joiner([&] {
    try {
      rank0 = Bootstrap::join(eve.relayedId(), 0, 3, Deadline::after(5s));
    } catch (const std::exception& e) {
      rank0Failure = e.what();
    }
  });
  const Deadline sniffing = Deadline::after(5s);
  while (eve.sniffed().size() < rendezvous::kHelloBytes && !sniffing.expired()) {
    std::this_thread::sleep_for(1ms);
  }
  const std::string hello = eve.sniffed().substr(0, rendezvous::kHelloBytes);
  EXPECT_EQ(hello.size(), rendezvous::kHelloBytes);
  const std::string secret(id.secret.begin(), id.secret.end());
  EXPECT_EQ(hello.find(secret), std::string::npos) << "the secret crossed the network";

  // The sniffed hello, sent again on a new connection (so with a new challenge).
  fixture::RawClient replay = fixture::rawConnect(id);
  sendAll(replay.sock.fd(), hello.data(), hello.size(), Deadline::after(3s), nullptr, "server");
  uint8_t header[rendezvous::kFrameHeaderBytes];
  recvAll(replay.sock.fd(), header, sizeof(header), Deadline::after(3s), nullptr, "server");
  EXPECT_EQ(wire::getU32(header), static_cast<uint32_t>(rendezvous::FrameKind::Error));
  std::string why(std::min<uint64_t>(wire::getU64(header + 8), 4096), '\0');
  recvAll(replay.sock.fd(), why.data(), why.size(), Deadline::after(3s), nullptr, "server");
  EXPECT_NE(why.find("replayed"), std::string::npos) << why;

  // The job completes, rank 0 still through the relay.
  EXPECT_EQ(runWorld(id, 3,
                     [&] {
                       joiner.join();
                       if (!rank0Failure.empty()) throw Error(ErrorCode::RemoteError, rank0Failure);
                       return std::move(rank0);
                     }),
            "");
  if (joiner.joinable()) joiner.join();
}

}  // namespace
}  // namespace loom
