#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_parser.h"
#include "bootstrap/rendezvous_protocol.h"
#include "core/error.h"
#include "core/keyed_hash.h"
#include "core/socket.h"
#include "tests/unit/bootstrap_fixture.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

using fixture::joinAll;
using fixture::loopbackServer;
using fixture::rawConnect;
using fixture::signedHello;

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

// The server must close the connection soon (after its challenge and, for a
// refused hello, an error frame), not leave it open until the deadline.
void expectDropped(const Socket& sock) {
  const Deadline deadline = Deadline::after(3s);
  char chunk[256];
  while (!deadline.expired()) {
    pollfd ready{sock.fd(), POLLIN, 0};
    ::poll(&ready, 1, 50);
    const ssize_t n = ::recv(sock.fd(), chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;  // EOF or reset
  }
  ADD_FAILURE() << "the server kept a stray's connection open";
}

TEST(Bootstrap, StraysDuringInitDoNotHarmRealRanks) {
  const UniqueId id = loopbackServer();
  UniqueId wrongSecret = id;
  wrongSecret.secret[0] ^= 0x55;
  // Strays connect before the real ranks, so they are there during init.
  fixture::RawClient forger = rawConnect(id);
  const std::string forged = signedHello(wrongSecret, forger.challenge, 0, 3);
  sendAll(forger.sock.fd(), forged.data(), forged.size(), Deadline::after(3s), nullptr, "server");
  const Socket& badSecret = forger.sock;
  const Socket garbage = strayConnection(id, std::string(64, 'x'));
  const Socket partial = strayConnection(id, signedHello(id, {}, 0, 3).substr(0, 20));
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
        EXPECT_NE(std::string(e.what()).find("rank 2 (pid "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("disconnected without leaving"), std::string::npos)
            << e.what();
      }
      EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    });
  }
  for (auto& t : threads) t.join();
}

// Calls checkPeers every millisecond until it throws or `limit` passes.
// Returns the error (empty if none) and how long it took to appear.
std::pair<std::string, std::chrono::microseconds> pollPeers(Bootstrap& boot,
                                                            std::chrono::milliseconds limit,
                                                            ErrorCode* code = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < limit) {
    try {
      boot.checkPeers();
    } catch (const Error& e) {
      if (code != nullptr) *code = e.code();
      return {e.what(), std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - start)};
    }
    std::this_thread::sleep_for(1ms);
  }
  return {"", limit};
}

TEST(BootstrapLiveness, RevokeIsAnnouncedToEveryRankAndRoundsStillComplete) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 3);
  for (auto& boot : boots) boot->checkPeers();
  boots[1]->revoke("");
  boots[1]->revoke("");  // twice: announced once
  for (int r = 0; r < 3; ++r) {
    ErrorCode code = ErrorCode::InternalError;
    const auto [error, took] = pollPeers(*boots[r], 3s, &code);
    EXPECT_EQ(code, ErrorCode::Revoked) << error;
    EXPECT_NE(error.find("rank 1 revoked the communicator (loomCommRevoke)"), std::string::npos)
        << error;
    EXPECT_EQ(boots[r]->revokedBy(), 1);
    EXPECT_EQ(boots[r]->revokedOnMismatch(), "");
  }
  // Not sticky for rounds: survivors can still agree over the bootstrap.
  std::vector<std::thread> threads;
  std::vector<std::vector<std::string>> gathered(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back(
        [&, r] { gathered[r] = boots[r]->allGather(std::to_string(r), Deadline::after(5s)); });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(gathered[r], (std::vector<std::string>{"0", "1", "2"}));
}

// A rank that found ranks in different calls revokes with its error: every
// rank's next check reports that error once (InvalidUsage, the call then
// waiting is the one the ranks disagreed on), then the revoke, saying why.
TEST(BootstrapLiveness, RevokeOnAMismatchCarriesTheError) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 3);
  const std::string mismatch = "rank 2 called #0: AllReduce of 4 float32 elements (max), but ...";
  boots[2]->revoke(mismatch);
  for (int r = 0; r < 3; ++r) {
    ErrorCode code = ErrorCode::InternalError;
    const std::string first = pollPeers(*boots[r], 3s, &code).first;
    EXPECT_EQ(code, ErrorCode::InvalidUsage) << first;
    EXPECT_NE(first.find("rank 2 found ranks in different calls and revoked the communicator"),
              std::string::npos)
        << first;
    EXPECT_NE(first.find(mismatch), std::string::npos) << first;
    EXPECT_EQ(boots[r]->revokedBy(), 2);
    EXPECT_EQ(boots[r]->revokedOnMismatch(), mismatch);
    const std::string later = pollPeers(*boots[r], 3s, &code).first;
    EXPECT_EQ(code, ErrorCode::Revoked) << later;
    EXPECT_NE(later.find("rank 2 revoked the communicator (it found ranks in different calls)"),
              std::string::npos)
        << later;
  }
  // A plain revoke after it changes nothing: announced once.
  boots[0]->revoke("");
  ErrorCode code = ErrorCode::InternalError;
  EXPECT_NE(pollPeers(*boots[1], 3s, &code).first.find("rank 2 revoked"), std::string::npos);
}

TEST(BootstrapLiveness, RevokerLeavingWithoutGoodbyeIsStillARevoke) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 3);
  boots[1]->revoke("");
  boots[1].reset();  // destroyed without leave(), as a revoked communicator is
  for (int r : {0, 2}) {
    ErrorCode code = ErrorCode::InternalError;
    std::string error;
    // Keep reading until the disconnect has arrived too: the answer stays the revoke.
    for (int i = 0; i < 3; ++i) error = pollPeers(*boots[r], 3s, &code).first;
    EXPECT_EQ(code, ErrorCode::Revoked) << error;
    EXPECT_NE(error.find("rank 1 revoked"), std::string::npos) << error;
  }
}

TEST(BootstrapLiveness, DeadRankIsNamedByCheckPeersWithinMilliseconds) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 4);
  for (auto& boot : boots) boot->checkPeers();  // healthy: nothing to report
  boots[3].reset();  // closes its socket without leave(): as if the process died
  for (int r = 0; r < 3; ++r) {
    ErrorCode code{};
    const auto [error, took] = pollPeers(*boots[r], 3s, &code);
    EXPECT_EQ(code, ErrorCode::RemoteError);
    EXPECT_NE(error.find("rank 3 (pid "), std::string::npos) << error;
    EXPECT_NE(error.find("disconnected without leaving"), std::string::npos) << error;
    // Event-driven on both sides: normally well under a millisecond.
    RecordProperty("rank" + std::to_string(r) + "_latency_us", static_cast<int>(took.count()));
    EXPECT_LT(took, 500ms) << "rank " << r << " saw the failure only after " << took.count()
                           << " us";
    // Sticky: every later call reports the same failure.
    try {
      boots[r]->checkPeers();
      ADD_FAILURE() << "checkPeers forgot the failure";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), error);
    }
    try {
      boots[r]->barrier(Deadline::after(5s));
      ADD_FAILURE() << "barrier succeeded without rank 3";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::RemoteError);
      EXPECT_EQ(std::string(e.what()), error);
    }
  }
}

TEST(BootstrapLiveness, CleanLeaveIsNotAFailure) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 3);
  boots[2]->leave("");
  boots[2]->leave("");     // idempotent
  boots[2]->checkPeers();  // a departed rank has nothing to check
  boots[2].reset();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(pollPeers(*boots[r], 150ms).first, "");
  // The others may still leave cleanly too, in any order.
  boots[0]->leave("");
  EXPECT_EQ(pollPeers(*boots[1], 50ms).first, "");
}

TEST(BootstrapLiveness, RoundAfterACleanLeaveNamesTheLeaver) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 3);
  boots[1]->leave("");
  boots[1].reset();
  for (int r : {0, 2}) {
    const auto start = std::chrono::steady_clock::now();
    try {
      boots[r]->allGather("x", Deadline::after(10s));
      ADD_FAILURE() << "allGather completed without rank 1";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::RemoteError);
      EXPECT_NE(std::string(e.what()).find("rank 1 (pid "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("already left the communicator"), std::string::npos)
          << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  }
}

TEST(BootstrapLiveness, RoundWaitingWhenARankLeavesFailsAtOnce) {
  const UniqueId id = loopbackServer();
  auto boots = joinAll(id, 2);
  std::string error;
  std::thread waiter([&] {
    try {
      boots[0]->allGather("x", Deadline::after(10s));
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(100ms);  // normally rank 0's blob is at the server by now
  boots[1]->leave("");
  boots[1].reset();
  waiter.join();
  EXPECT_NE(error.find("rank 1 (pid "), std::string::npos) << error;
  EXPECT_NE(error.find("already left"), std::string::npos) << error;
}

TEST(BootstrapLiveness, MalformedMessageFromAJoinedRankIsReported) {
  const UniqueId id = loopbackServer();
  std::unique_ptr<Bootstrap> rank0;
  std::thread joiner([&] { rank0 = Bootstrap::join(id, 0, 2, Deadline::after(5s)); });
  // Rank 1 is a raw socket: a valid hello, then a message of unknown kind.
  fixture::RawClient raw = rawConnect(id);
  const std::string bytes = signedHello(id, raw.challenge, 1, 2);
  sendAll(raw.sock.fd(), bytes.data(), bytes.size(), Deadline::after(3s), nullptr, "server");
  const Socket& rank1 = raw.sock;
  joiner.join();
  ASSERT_NE(rank0, nullptr);
  const std::string junk = rendezvous::messageHeader(static_cast<rendezvous::MessageKind>(77), 0);
  sendAll(rank1.fd(), junk.data(), junk.size(), Deadline::after(3s), nullptr, "server");
  const auto [error, took] = pollPeers(*rank0, 3s);
  EXPECT_NE(error.find("rank 1 (pid 0 on host ?)"), std::string::npos) << error;
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
}

// A hand-driven server: accepts one client, checks its hello and then writes
// whatever bytes the test wants, in whatever pieces.
class FakeServer {
 public:
  FakeServer() : listener_(listenTcp("127.0.0.1", 0)) {
    id_.host = "127.0.0.1";
    id_.port = SocketAddress::local(listener_.fd()).port();
    id_.secret[0] = 42;
  }
  const UniqueId& id() const { return id_; }

  /// Accepts the client, challenges it, checks its hello and answers Ok with
  /// a proof made with `proofSecret` (the id's own unless an impostor),
  /// naming `hostRank` as the rank whose process runs this server.
  rendezvous::Hello acceptAndWelcome(std::optional<std::array<uint8_t, 16>> proofSecret = {},
                                     uint32_t hostRank = rendezvous::kNoHostRank) {
    waitReady(listener_.fd(), POLLIN, Deadline::after(5s), nullptr, "client");
    client_ = Socket(::accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    EXPECT_TRUE(client_.valid());
    const auto challenge = randomArray<rendezvous::kNonceBytes>();
    send(rendezvous::frame(rendezvous::FrameKind::Challenge,
                           std::string(challenge.begin(), challenge.end())));
    uint8_t bytes[rendezvous::kHelloBytes];
    recvAll(client_.fd(), bytes, sizeof(bytes), Deadline::after(5s), nullptr, "client");
    rendezvous::Hello hello;
    EXPECT_EQ(rendezvous::decodeHello(bytes, &hello), "");
    EXPECT_TRUE(sameBytes(hello.mac, rendezvous::handshakeMac(id_.secret, rendezvous::kHelloLabel,
                                                              challenge, hello)));
    const Digest proof = rendezvous::handshakeMac(proofSecret.value_or(id_.secret),
                                                  rendezvous::kWelcomeLabel, challenge, hello);
    std::string ok(proof.begin(), proof.end());
    ok.append(4, '\0');
    wire::putU32(reinterpret_cast<uint8_t*>(ok.data() + rendezvous::kMacBytes), hostRank);
    send(rendezvous::frame(rendezvous::FrameKind::Ok, ok));
    return hello;
  }
  void send(const std::string& bytes) {
    sendAll(client_.fd(), bytes.data(), bytes.size(), Deadline::after(5s), nullptr, "client");
  }
  /// Reads one client message header and payload.
  std::string receiveRound() {
    uint8_t header[rendezvous::kMessageHeaderBytes];
    recvAll(client_.fd(), header, sizeof(header), Deadline::after(5s), nullptr, "client");
    EXPECT_EQ(wire::getU32(header), static_cast<uint32_t>(rendezvous::MessageKind::Round));
    std::string blob(wire::getU32(header + 4), '\0');
    recvAll(client_.fd(), blob.data(), blob.size(), Deadline::after(5s), nullptr, "client");
    return blob;
  }

 private:
  Socket listener_;
  Socket client_;
  UniqueId id_;
};

TEST(BootstrapAuth, ServerThatCannotProveTheSecretIsNotJoined) {
  FakeServer impostor;
  std::string error;
  std::thread joiner([&] {
    try {
      Bootstrap::join(impostor.id(), 0, 2, Deadline::after(5s));
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::array<uint8_t, 16> guess{};
  guess[0] = 43;  // the impostor does not know the id's secret
  impostor.acceptAndWelcome(guess);
  joiner.join();
  EXPECT_NE(error.find("does not prove the secret"), std::string::npos) << error;
}

TEST(BootstrapLiveness, ErrorFrameArrivingByteByByteIsReadWhole) {
  FakeServer server;
  std::unique_ptr<Bootstrap> boot;
  std::thread joiner([&] { boot = Bootstrap::join(server.id(), 0, 2, Deadline::after(5s)); });
  const rendezvous::Hello hello = server.acceptAndWelcome();
  joiner.join();
  ASSERT_NE(boot, nullptr);
  EXPECT_EQ(hello.pid, static_cast<uint32_t>(::getpid()));
  EXPECT_FALSE(hello.host.empty());
  const std::string message = "rank 1 (pid 7 on host h) disconnected without leaving";
  const std::string bytes = rendezvous::frame(rendezvous::FrameKind::Error, message);
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    server.send(bytes.substr(i, 1));
    std::this_thread::sleep_for(200us);
    ASSERT_NO_THROW(boot->checkPeers()) << "after byte " << i;
  }
  server.send(bytes.substr(bytes.size() - 1));
  ErrorCode code{};
  EXPECT_EQ(pollPeers(*boot, 3s, &code).first, message);
  EXPECT_EQ(code, ErrorCode::RemoteError);
}

TEST(BootstrapLiveness, GatherSplitBetweenCheckPeersAndAllGatherStillParses) {
  FakeServer server;
  std::unique_ptr<Bootstrap> boot;
  std::thread joiner([&] { boot = Bootstrap::join(server.id(), 1, 2, Deadline::after(5s)); });
  server.acceptAndWelcome();
  joiner.join();
  ASSERT_NE(boot, nullptr);
  const std::string gather =
      rendezvous::frame(rendezvous::FrameKind::Gather, rendezvous::encodeGather({"zero", "one!"}));
  // The first half arrives early (checkPeers buffers it); the rest only once
  // the round was sent. A client that dropped the half would misparse.
  server.send(gather.substr(0, 11));
  std::this_thread::sleep_for(20ms);
  ASSERT_NO_THROW(boot->checkPeers());
  std::thread finisher([&] {
    EXPECT_EQ(server.receiveRound(), "one!");
    server.send(gather.substr(11));
  });
  const auto all = boot->allGather("one!", Deadline::after(5s));
  finisher.join();
  EXPECT_EQ(all, (std::vector<std::string>{"zero", "one!"}));
  EXPECT_NO_THROW(boot->checkPeers());
}

// Rank 1 of 2 joins a server that names `hostRank` as its process's rank
// (kNoHostRank: none); the server announces its clean exit (saying `why` the
// host rank left) and goes. Checking peers must see no failure, and a later
// round (which needs the server) fails: returns that round's error.
std::string roundErrorAfterClosing(uint32_t hostRank, const std::string& why = "") {
  auto server = std::make_unique<FakeServer>();
  std::unique_ptr<Bootstrap> boot;
  std::thread joiner([&] { boot = Bootstrap::join(server->id(), 1, 2, Deadline::after(5s)); });
  server->acceptAndWelcome({}, hostRank);
  joiner.join();
  if (boot == nullptr) return "join failed";
  server->send(rendezvous::frame(rendezvous::FrameKind::Closing, why));
  server.reset();
  EXPECT_EQ(pollPeers(*boot, 200ms).first, "");
  try {
    boot->barrier(Deadline::after(5s));
  } catch (const Error& e) {
    return e.what();
  }
  return "barrier without a server succeeded";
}

// The rank whose process runs the server announces its clean exit; the others
// may still be finishing their last collective, and the server's end must not
// fail it. A later bootstrap round still fails.
TEST(BootstrapLiveness, ServerExitAfterClosingIsNotAFailure) {
  const std::string error = roundErrorAfterClosing(rendezvous::kNoHostRank);
  EXPECT_NE(error.find("closed its connection"), std::string::npos) << error;
}

TEST(BootstrapLiveness, ServerExitIsReportedByCheckPeers) {
  auto server = std::make_unique<FakeServer>();
  std::unique_ptr<Bootstrap> boot;
  std::thread joiner([&] { boot = Bootstrap::join(server->id(), 0, 2, Deadline::after(5s)); });
  server->acceptAndWelcome();
  joiner.join();
  ASSERT_NE(boot, nullptr);
  server.reset();
  const auto [error, took] = pollPeers(*boot, 3s);
  EXPECT_NE(error.find("closed its connection"), std::string::npos) << error;
}

TEST(BootstrapLiveness, ServerExitNamesTheRankWhoseProcessRanIt) {
  auto server = std::make_unique<FakeServer>();
  std::unique_ptr<Bootstrap> boot;
  std::thread joiner([&] { boot = Bootstrap::join(server->id(), 1, 2, Deadline::after(5s)); });
  server->acceptAndWelcome({}, 0);
  joiner.join();
  ASSERT_NE(boot, nullptr);
  server.reset();  // as rank 0's process dying takes its server along
  const auto [error, took] = pollPeers(*boot, 3s);
  EXPECT_NE(error.find("rank 0 died or exited"), std::string::npos) << error;
}

// Rank 0 announced it was leaving (its communicator destroyed, often after
// another rank failed) before its process ended: a later call says it left,
// not that it died.
TEST(BootstrapLiveness, ServerExitAfterTheHostLeftSaysItLeft) {
  const std::string error = roundErrorAfterClosing(0);
  EXPECT_NE(error.find("rank 0 left this communicator"), std::string::npos) << error;
  EXPECT_EQ(error.find("died"), std::string::npos) << error;
}

// Rank 0 left because its call failed on another rank's account: the others
// hear what it met, which names the rank that failed first.
TEST(BootstrapLiveness, ServerExitAfterTheHostLeftSaysWhatItMet) {
  const std::string why = "tcp link to rank 3 closed (its process died?)";
  const std::string error = roundErrorAfterClosing(0, why);
  EXPECT_NE(error.find("rank 0 left this communicator"), std::string::npos) << error;
  EXPECT_NE(error.find("after its call failed (" + why + ")"), std::string::npos) << error;
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
