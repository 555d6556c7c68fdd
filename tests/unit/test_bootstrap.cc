#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_protocol.h"
#include "core/error.h"
#include "core/socket.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

UniqueId loopbackServer() {
  RendezvousOptions options;
  options.bindHost = "127.0.0.1";
  return startRendezvous(options);
}

std::string blobFor(int rank, int round) {
  // Distinct contents and sizes, including empty blobs and one large round.
  const size_t size = round == 2 ? 200000 + rank : static_cast<size_t>((rank * 7 + round) % 5) * 3;
  std::string blob(size, '\0');
  for (size_t i = 0; i < size; ++i) blob[i] = static_cast<char>(rank * 31 + round * 7 + i);
  return blob;
}

// Runs `nranks` ranks as threads; each joins `id` and runs `body`. Returns the
// first failure message, if any.
template <typename Body>
std::string runRanks(const UniqueId& id, int nranks, Body body) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(nranks);
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto boot = Bootstrap::join(id, r, nranks, Deadline::after(5s));
        body(*boot);
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) {
    if (!f.empty()) return f;
  }
  return {};
}

class BootstrapWorld : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapWorld, AllGatherRoundsDeliverEveryBlob) {
  const int nranks = GetParam();
  const UniqueId id = loopbackServer();
  const std::string failure = runRanks(id, nranks, [nranks](Bootstrap& boot) {
    EXPECT_EQ(boot.nranks(), nranks);
    for (int round = 0; round < 5; ++round) {
      const auto all = boot.allGather(blobFor(boot.rank(), round), Deadline::after(5s));
      ASSERT_EQ(all.size(), static_cast<size_t>(nranks));
      for (int r = 0; r < nranks; ++r) EXPECT_EQ(all[r], blobFor(r, round)) << "round " << round;
    }
    boot.barrier(Deadline::after(5s));
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(Worlds, BootstrapWorld, ::testing::Values(1, 2, 5, 8));

// A raw connection to the server that has sent `bytes`.
Socket strayConnection(const UniqueId& id, const std::string& bytes) {
  Socket sock =
      connectWithRetry(SocketAddress::fromHost(id.host, id.port), Deadline::after(3s), nullptr);
  if (!bytes.empty()) {
    sendAll(sock.fd(), bytes.data(), bytes.size(), Deadline::after(3s), nullptr, "server");
  }
  return sock;
}

// The server must drop the connection: recv fails at once, not at the deadline.
void expectDropped(const Socket& sock) {
  char c;
  try {
    recvAll(sock.fd(), &c, 1, Deadline::after(3s), nullptr, "server");
    ADD_FAILURE() << "server answered a stray";
  } catch (const Error& e) {
    // EOF, or a reset when the server closed with our bytes unread.
    EXPECT_EQ(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
  }
}

std::string helloBytes(const std::array<uint8_t, 16>& secret, uint32_t rank, uint32_t nranks) {
  rendezvous::Hello hello;
  hello.secret = secret;
  hello.rank = rank;
  hello.nranks = nranks;
  std::string bytes(rendezvous::kHelloBytes, '\0');
  rendezvous::encodeHello(hello, reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

TEST(Bootstrap, StraysDuringInitDoNotHarmRealRanks) {
  const UniqueId id = loopbackServer();
  auto wrongSecret = id.secret;
  wrongSecret[0] ^= 0x55;
  // Strays connect before the real ranks, so they are there during init.
  const Socket badSecret = strayConnection(id, helloBytes(wrongSecret, 0, 3));
  const Socket garbage = strayConnection(id, std::string(64, 'x'));
  const Socket partial = strayConnection(id, helloBytes(id.secret, 0, 3).substr(0, 20));
  const Socket silent = strayConnection(id, "");
  const std::string failure = runRanks(id, 3, [](Bootstrap& boot) {
    const auto all = boot.allGather(std::to_string(boot.rank() * 11), Deadline::after(5s));
    EXPECT_EQ(all, (std::vector<std::string>{"0", "11", "22"}));
  });
  EXPECT_EQ(failure, "");
  expectDropped(badSecret);
  expectDropped(garbage);
}

// Two joins race; whichever the server sees second is refused. Returns the
// refusal (InvalidUsage) message, and the winner's Bootstrap.
std::string raceTwoJoins(const UniqueId& id, int rankA, int nranksA, int rankB, int nranksB,
                         std::unique_ptr<Bootstrap>* winner, std::chrono::milliseconds timeout) {
  std::unique_ptr<Bootstrap> boots[2];
  std::string refusals[2];
  auto attempt = [&](int i, int rank, int nranks) {
    try {
      boots[i] = Bootstrap::join(id, rank, nranks, Deadline::after(timeout));
    } catch (const Error& e) {
      if (e.code() == ErrorCode::InvalidUsage) refusals[i] = e.what();
    }
  };
  std::thread a(attempt, 0, rankA, nranksA);
  std::thread b(attempt, 1, rankB, nranksB);
  a.join();
  b.join();
  EXPECT_TRUE(refusals[0].empty() != refusals[1].empty()) << refusals[0] << " | " << refusals[1];
  if (winner != nullptr) *winner = std::move(boots[refusals[0].empty() ? 0 : 1]);
  return refusals[0] + refusals[1];
}

TEST(Bootstrap, DuplicateRankIsInvalidUsage) {
  const UniqueId id = loopbackServer();
  std::unique_ptr<Bootstrap> rank0;
  std::unique_ptr<Bootstrap> rank1;
  std::thread last([&] {
    std::this_thread::sleep_for(300ms);  // normally after both rank-0 hellos
    rank1 = Bootstrap::join(id, 1, 2, Deadline::after(5s));
  });
  const std::string refusal = raceTwoJoins(id, 0, 2, 0, 2, &rank0, 5s);
  last.join();
  // "joined twice"; on a very slow machine rank 1 may complete the set first.
  EXPECT_TRUE(refusal.find("joined twice") != std::string::npos ||
              refusal.find("after all 2 ranks had joined") != std::string::npos)
      << refusal;
  ASSERT_NE(rank0, nullptr);
  ASSERT_NE(rank1, nullptr);
  std::thread t([&] { rank0->barrier(Deadline::after(5s)); });
  EXPECT_EQ(rank1->allGather("b", Deadline::after(5s)).size(), 2u);
  t.join();
}

TEST(Bootstrap, NranksMismatchIsInvalidUsage) {
  const UniqueId id = loopbackServer();
  // The winner then waits for ranks that never come: RemoteError at its deadline.
  const std::string refusal = raceTwoJoins(id, 0, 2, 1, 3, nullptr, 1500ms);
  EXPECT_NE(refusal.find("but the ranks that joined first say"), std::string::npos) << refusal;
}

TEST(Bootstrap, DisconnectedRankIsRemoteErrorOnTheOthers) {
  const UniqueId id = loopbackServer();
  std::vector<std::unique_ptr<Bootstrap>> boots(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] { boots[r] = Bootstrap::join(id, r, 3, Deadline::after(5s)); });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  boots[2].reset();  // rank 2 dies
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const auto start = std::chrono::steady_clock::now();
      try {
        boots[r]->allGather("x", Deadline::after(5s));
        ADD_FAILURE() << "allGather succeeded without rank 2";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::RemoteError);
        EXPECT_NE(std::string(e.what()).find("rank 2 disconnected"), std::string::npos) << e.what();
      }
      EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    });
  }
  for (auto& t : threads) t.join();
}

uint16_t unusedPort() {
  Socket sock = listenTcp("127.0.0.1", 0);
  return SocketAddress::local(sock.fd()).port();  // closed on return: nobody listens
}

TEST(Bootstrap, JoinWithoutServerFailsAtTheDeadline) {
  UniqueId id;
  id.host = "127.0.0.1";
  id.port = unusedPort();
  const auto start = std::chrono::steady_clock::now();
  try {
    Bootstrap::join(id, 0, 2, Deadline::after(700ms));
    ADD_FAILURE() << "join succeeded without a server";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError) << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 650ms);
  EXPECT_LT(took, 2s);
}

TEST(Bootstrap, AbortFlagStopsJoin) {
  UniqueId id;
  id.host = "127.0.0.1";
  id.port = unusedPort();
  std::atomic<bool> abortFlag{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    abortFlag = true;
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    Bootstrap::join(id, 0, 2, Deadline::after(10s), &abortFlag);
    ADD_FAILURE() << "join succeeded without a server";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Aborted) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  aborter.join();
}

TEST(Bootstrap, InvalidArgumentsAndOversizedBlob) {
  const UniqueId id = loopbackServer();
  EXPECT_THROW(Bootstrap::join(id, 2, 2, Deadline::after(1s)), Error);
  EXPECT_THROW(Bootstrap::join(id, -1, 2, Deadline::after(1s)), Error);
  auto boot = Bootstrap::join(id, 0, 1, Deadline::after(5s));
  try {
    boot->allGather(std::string((1 << 20) + 1, 'a'), Deadline::after(1s));
    ADD_FAILURE() << "oversized blob accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
  EXPECT_EQ(boot->allGather(std::string(1 << 20, 'a'), Deadline::after(5s))[0].size(), 1u << 20);
}

}  // namespace
}  // namespace loom
