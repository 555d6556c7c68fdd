// UCX links between ranks that are threads of this process, each with its own
// UcxWorker, as the communicator will have them. No environment settings are
// needed: without RDMA devices UCX picks tcp over loopback here (peer-failure
// handling rules out its shared-memory transports).
//
// Tests of a peer going away pin their workers to tcp (a per-worker setting,
// not setenv), where the closed socket is noticed within milliseconds. Over
// RDMA, a peer that is gone while we only wait to receive is noticed by UCX's
// keepalive (UCX_KEEPALIVE_INTERVAL, 20 s by default), and an unanswered send
// by the transport's retry timeout (seconds): too slow for a unit test, and
// why the communicator's bootstrap liveness check stays the first line.
#if LOOM_HAVE_UCX

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "link_traffic.h"
#include "tcp_mesh.h"
#include "transports/ucx/ucx_transport.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

using Links = std::vector<std::unique_ptr<Link>>;

struct World {
  std::vector<std::unique_ptr<UcxWorker>> workers;
  std::vector<std::string> addresses;
  std::vector<Links> links;
  std::vector<std::string> errors;  // per rank, empty if it connected
};

std::vector<int> othersThan(int me, int nranks) {
  std::vector<int> peers;
  for (int p = 0; p < nranks; ++p) {
    if (p != me) peers.push_back(p);
  }
  return peers;
}

// Workers that notice a vanished peer quickly (see the top of this file).
const UcxWorker::Settings kTcpOnly{{"TLS", "tcp"}};

World makeWorkers(int nranks, const UcxWorker::Settings& settings = {}) {
  World w;
  for (int r = 0; r < nranks; ++r) {
    w.workers.push_back(std::make_unique<UcxWorker>(settings));
    w.addresses.push_back(w.workers.back()->address());
  }
  w.links.resize(nranks);
  w.errors.resize(nranks);
  return w;
}

// Connects the ranks in `connecting` (threads) all-to-all; tags[r] is rank r's commTag,
// keys[r] its link key (default: one key for all).
void connect(World& w, const std::vector<int>& connecting, const UcxConfig& config,
             const std::vector<uint64_t>& tags, std::chrono::milliseconds timeout = 5s,
             const std::atomic<bool>* abortFlag = nullptr, const std::vector<Digest>& keys = {}) {
  const int nranks = static_cast<int>(w.workers.size());
  std::vector<std::thread> threads;
  for (int r : connecting) {
    threads.emplace_back([&, r] {
      try {
        const LinkCredentials credentials{tags[r], keys.empty() ? sharedTestKey() : keys[r]};
        w.links[r] = connectUcxLinks(*w.workers[r],
                                     {r, othersThan(r, nranks), w.addresses, credentials,
                                      Deadline::after(timeout), abortFlag},
                                     config);
      } catch (const Error& e) {
        w.errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

World connectAll(int nranks, const UcxConfig& config, uint64_t tag = 0xabc,
                 const UcxWorker::Settings& settings = {}) {
  World w = makeWorkers(nranks, settings);
  std::vector<int> all(nranks);
  for (int r = 0; r < nranks; ++r) all[r] = r;
  connect(w, all, config, std::vector<uint64_t>(nranks, tag));
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(w.errors[r], "") << "rank " << r;
  return w;
}

using link_traffic::byteOf;
using link_traffic::exchange;
using link_traffic::waitIdle;

// Waits for the next message on `link`, progressing it; nullptr at the deadline.
const uint8_t* receive(Link& link, size_t bytes, Deadline deadline) {
  for (;;) {
    link.progress();
    if (const void* data = link.tryRecv(bytes)) return static_cast<const uint8_t*>(data);
    if (deadline.expired()) return nullptr;
    pollfd fd{link.pollFd(), POLLIN, 0};
    ::poll(&fd, 1, 1);
  }
}

/// Every rank of `w` exchanges `count` messages with every peer on all its
/// links at once (a thread each), `linksPerRank` links per rank.
void exchangeEverywhere(World& w, int count, size_t slotBytes, size_t linksPerRank) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < w.links.size(); ++r) {
    ASSERT_EQ(w.links[r].size(), linksPerRank) << "rank " << r;
    threads.emplace_back([&, r] {
      try {
        exchange(static_cast<int>(r), w.links[r], count, slotBytes);
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

class UcxLinkExchange : public ::testing::TestWithParam<int> {};

// 40 messages per direction and pair through 4 slots: flow control in both
// directions at once.
TEST_P(UcxLinkExchange, ManyMessagesBothDirections) {
  UcxConfig config;
  config.slotBytes = 256 * 1024;
  config.slots = 4;
  const int nranks = GetParam();
  World w = connectAll(nranks, config);
  exchangeEverywhere(w, 40, config.slotBytes, static_cast<size_t>(nranks - 1));
}

INSTANTIATE_TEST_SUITE_P(UcxLink, UcxLinkExchange, ::testing::Values(2, 3, 4));

// Links of several channels share each peer's endpoint: every channel carries
// its own traffic, and channel c of one rank meets channel c of the other.
TEST(UcxLink, ChannelsAreSeparateFifos) {
  UcxConfig config;
  config.slotBytes = 256 * 1024;
  config.channels = 3;
  World w = connectAll(2, config);
  ASSERT_EQ(w.links[0].size(), 3u);
  link_traffic::channelsStayApart(w.links[0], w.links[1]);
  link_traffic::channelsStayApart(w.links[1], w.links[0]);
  World three = connectAll(3, config);
  exchangeEverywhere(three, 20, config.slotBytes, 6);
}

TEST(UcxLink, AddressIsHex) {
  UcxWorker worker;
  const std::string& address = worker.address();
  ASSERT_FALSE(address.empty());
  EXPECT_EQ(address.size() % 2, 0u);
  EXPECT_EQ(address.find_first_not_of("0123456789abcdef"), std::string::npos);
}

// Settings apply to one worker: two workers restricted to tcp still connect,
// and a value UCX cannot parse is refused by name. (UCX 1.13 accepts unknown
// names and only warns about them when the worker is created.)
TEST(UcxLink, WorkerSettings) {
  World w = makeWorkers(2, {{"UCX_TLS", "tcp"}});
  UcxConfig config;
  config.slotBytes = 1024;
  connect(w, {0, 1}, config, {6, 6});
  ASSERT_EQ(w.errors[0] + w.errors[1], "");
  std::memset(w.links[0][0]->trySendSlot(1024), 3, 1024);
  w.links[0][0]->commitSend(1024);
  const uint8_t* data = receive(*w.links[1][0], 1024, Deadline::after(5s));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data[1023], 3);
  try {
    UcxWorker bad(UcxWorker::Settings{{"RNDV_THRESH", "lots"}});
    ADD_FAILURE() << "unparsable setting accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("UCX_RNDV_THRESH=lots"), std::string::npos) << e.what();
  }
}

// Both ranks commit a full FIFO of slot-sized (rendezvous) messages and wait
// until their sends drain before receiving anything: the pre-posted receives
// take them.
TEST(UcxLink, SendsDrainWhileBothSidesSend) {
  UcxConfig config;
  config.slotBytes = 1 << 20;
  config.slots = 3;
  World w = connectAll(2, config);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Link& link = *w.links[r][0];
      for (int m = 0; m < config.slots; ++m) {
        auto* slot = static_cast<uint8_t*>(link.trySendSlot(config.slotBytes));
        ASSERT_NE(slot, nullptr);
        for (size_t b = 0; b < config.slotBytes; ++b) slot[b] = byteOf(r, 1 - r, m, b);
        link.commitSend(config.slotBytes);
      }
      EXPECT_EQ(link.trySendSlot(1), nullptr) << "more than `slots` messages in flight";
      const Deadline deadline = Deadline::after(10s);
      while (!link.sendsDrained()) {
        ASSERT_FALSE(deadline.expired()) << "rank " << r << " could not drain its sends";
        if (!link.progress()) waitIdle(w.links[r]);
      }
      for (int m = 0; m < config.slots; ++m) {
        const uint8_t* data = receive(link, config.slotBytes, deadline);
        ASSERT_NE(data, nullptr) << "rank " << r << " message " << m;
        for (size_t b = 0; b < config.slotBytes; b += 4099) {
          ASSERT_EQ(data[b], byteOf(1 - r, r, m, b));
        }
        EXPECT_EQ(link.tryRecv(config.slotBytes), data);  // idempotent until released
        link.releaseRecv();
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(UcxLink, CallStampsTravelWithMessages) {
  UcxConfig config;
  config.slotBytes = 64;
  World w = connectAll(2, config);
  for (const uint32_t stamp : {3u, 4u}) {
    w.links[0][0]->stampSends(stamp);
    std::memset(w.links[0][0]->trySendSlot(64), 1, 64);  // a full slot: the stamp goes after it
    w.links[0][0]->commitSend(64);
  }
  w.links[1][0]->expectStamp(3);
  ASSERT_NE(receive(*w.links[1][0], 64, Deadline::after(5s)), nullptr);
  w.links[1][0]->releaseRecv();
  w.links[1][0]->expectStamp(5);
  try {
    receive(*w.links[1][0], 64, Deadline::after(5s));
    ADD_FAILURE() << "stamp mismatch not detected";
  } catch (const LinkStampMismatch& e) {
    EXPECT_EQ(e.peer(), 0);
  }
}

TEST(UcxLink, SizeMismatchIsRemoteError) {
  UcxConfig config;
  World w = connectAll(2, config);
  std::memset(w.links[0][0]->trySendSlot(10), 1, 10);
  w.links[0][0]->commitSend(10);
  try {
    const uint8_t* data = receive(*w.links[1][0], 11, Deadline::after(5s));
    ADD_FAILURE() << "mismatch not detected" << (data == nullptr ? " (nothing arrived)" : "");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("from rank 0: message 0 expected 11 bytes, peer sent 10"),
              std::string::npos)
        << e.what();
  }
}

// A hello MACed with another key is a stray, never a peer: the handshake goes
// on waiting (here until its short deadline) and the refusal says why.
TEST(UcxLink, WrongKeyIsIgnored) {
  UcxConfig config;
  World w = makeWorkers(2);
  Digest other = sharedTestKey();
  other[0] ^= 1;
  connect(w, {0, 1}, config, {7, 7}, 1s, nullptr, {sharedTestKey(), other});
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(w.errors[r].find("does not prove the communicator's key"), std::string::npos)
        << w.errors[r];
    EXPECT_TRUE(w.links[r].empty());
  }
}

TEST(UcxLink, OversizedSendIsRejected) {
  UcxConfig config;
  config.slotBytes = 100;
  World w = connectAll(2, config);
  EXPECT_THROW(w.links[0][0]->trySendSlot(101), Error);
  EXPECT_NE(w.links[0][0]->trySendSlot(100), nullptr);
}

TEST(UcxLink, WrongCommTagIsRefused) {
  UcxConfig config;
  World w = makeWorkers(2);
  const auto start = std::chrono::steady_clock::now();
  connect(w, {0, 1}, config, {0x111, 0x222}, 3s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "refusal waited for the deadline";
  EXPECT_NE(w.errors[0].find("rank 0 refused the handshake of rank 1: communicator tag "
                             "0000000000000222, expected 0000000000000111"),
            std::string::npos)
      << w.errors[0];
  EXPECT_NE(w.errors[1].find("rank 1 refused the handshake of rank 0"), std::string::npos)
      << w.errors[1];
}

TEST(UcxLink, SlotSizeMismatchIsRefused) {
  World w = makeWorkers(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      UcxConfig config;
      config.slotBytes = r == 0 ? 4096 : 8192;
      try {
        w.links[r] = connectUcxLinks(
            *w.workers[r],
            {r, {1 - r}, w.addresses, LinkCredentials{5, sharedTestKey()}, Deadline::after(3s)},
            config);
      } catch (const Error& e) {
        w.errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_NE(w.errors[0].find("8192 byte slots, expected 4096"), std::string::npos) << w.errors[0];
  EXPECT_NE(w.errors[1].find("4096 byte slots, expected 8192"), std::string::npos) << w.errors[1];
}

// Rank 1's worker exists (its address is known) but it never connects.
TEST(UcxLink, PeerThatNeverShowsUpTimesOut) {
  UcxConfig config;
  World w = makeWorkers(3);
  const auto start = std::chrono::steady_clock::now();
  connect(w, {0, 2}, config, {9, 9, 9}, 500ms);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 450ms);
  EXPECT_LT(took, 2s);
  for (int r : {0, 2}) {
    EXPECT_NE(w.errors[r].find("timed out waiting for the handshake of ranks 1 "),
              std::string::npos)
        << w.errors[r];
  }
}

TEST(UcxLink, AbortStopsConnecting) {
  UcxConfig config;
  World w = makeWorkers(2);
  std::atomic<bool> abort{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(100ms);
    abort = true;
  });
  const auto start = std::chrono::steady_clock::now();
  connect(w, {0}, config, {1, 1}, 10s, &abort);
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_NE(w.errors[0].find("rank 0 aborted while waiting for the handshake of ranks 1"),
            std::string::npos)
      << w.errors[0];
}

// A survivor waiting for a message from a rank whose links and worker are
// destroyed mid-stream gets RemoteError naming it. Messages that arrived
// before are still delivered.
TEST(UcxLink, PeerDestroyedMidStreamIsRemoteError) {
  UcxConfig config;
  config.slotBytes = 4096;
  World w = connectAll(2, config, 0xabc, kTcpOnly);
  Link& survivor = *w.links[0][0];
  std::memset(w.links[1][0]->trySendSlot(64), 7, 64);
  w.links[1][0]->commitSend(64);
  const Deadline drained = Deadline::after(5s);
  while (!w.links[1][0]->sendsDrained()) {
    ASSERT_FALSE(drained.expired());
    w.links[1][0]->progress();
  }
  w.links[1].clear();
  w.workers[1].reset();

  const auto start = std::chrono::steady_clock::now();
  const uint8_t* first = receive(survivor, 64, Deadline::after(5s));
  ASSERT_NE(first, nullptr) << "a message sent before the peer died was lost";
  EXPECT_EQ(first[63], 7);
  survivor.releaseRecv();
  try {
    receive(survivor, 64, Deadline::after(5s));
    ADD_FAILURE() << "a destroyed peer was not noticed within 5 s";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("ucx link to rank 1 failed"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // Sending to it fails too, rather than filling the FIFO.
  EXPECT_THROW(survivor.trySendSlot(8), Error);
}

// Rendezvous sends wait for the receiver to fetch the data; rank 1 never
// progresses and then goes away, so rank 0's progress() must fail, not wait.
TEST(UcxLink, PeerDestroyedWithSendsInFlightIsRemoteError) {
  UcxConfig config;
  config.slotBytes = 1 << 20;
  config.slots = 2;
  World w = connectAll(2, config, 0xabc, kTcpOnly);
  Link& survivor = *w.links[0][0];
  for (int m = 0; m < config.slots; ++m) {
    void* slot = survivor.trySendSlot(config.slotBytes);
    ASSERT_NE(slot, nullptr);
    std::memset(slot, m, config.slotBytes);
    survivor.commitSend(config.slotBytes);
  }
  survivor.progress();
  w.links[1].clear();
  w.workers[1].reset();
  const Deadline deadline = Deadline::after(5s);
  try {
    while (!survivor.sendsDrained()) {
      ASSERT_FALSE(deadline.expired()) << "sends to a destroyed peer neither drained nor failed";
      if (!survivor.progress()) waitIdle(w.links[0]);
    }
    // The peer may have fetched everything before it went: nothing to report then.
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("ucx link to rank 1"), std::string::npos) << e.what();
  }
}

// Rank 1 is gone before rank 0 connects: its address leads nowhere.
TEST(UcxLink, ConnectingToADestroyedWorkerFails) {
  UcxConfig config;
  World w = makeWorkers(2, kTcpOnly);
  w.workers[1].reset();
  const auto start = std::chrono::steady_clock::now();
  connect(w, {0}, config, {4, 4}, 1s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_NE(w.errors[0].find("rank 1"), std::string::npos) << w.errors[0];
}

TEST(UcxLink, PollFdWakesWhenDataArrives) {
  UcxConfig config;
  World w = connectAll(2, config);
  Link& receiver = *w.links[1][0];
  ASSERT_GE(receiver.pollFd(), 0);
  // Idle progress arms the worker's event fd.
  for (int i = 0; i < 64; ++i) EXPECT_FALSE(receiver.progress());
  pollfd idle{receiver.pollFd(), POLLIN, 0};
  EXPECT_EQ(::poll(&idle, 1, 50), 0) << "event fd readable with nothing to do";
  std::memset(w.links[0][0]->trySendSlot(100), 5, 100);
  w.links[0][0]->commitSend(100);
  w.links[0][0]->progress();
  pollfd ready{receiver.pollFd(), POLLIN, 0};
  EXPECT_EQ(::poll(&ready, 1, 2000), 1);
  const uint8_t* data = receive(receiver, 100, Deadline::after(2s));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data[99], 5);
}

TEST(UcxLink, InvalidPeersAndConfigRejected) {
  UcxWorker worker;
  UcxConfig config;
  const std::vector<std::string> addresses{worker.address(), worker.address()};
  auto connectTo = [&](std::vector<int> peers, const std::vector<std::string>& addrs) {
    connectUcxLinks(worker,
                    {0, peers, addrs, LinkCredentials{1, sharedTestKey()}, Deadline::after(1s)},
                    config);
  };
  EXPECT_THROW(connectTo({0}, addresses), Error);     // itself
  EXPECT_THROW(connectTo({2}, addresses), Error);     // outside the world
  EXPECT_THROW(connectTo({1, 1}, addresses), Error);  // repeated
  EXPECT_THROW(connectTo({1}, {worker.address(), "not hex"}), Error);
  EXPECT_THROW(connectTo({1}, {"00", worker.address()}), Error);  // not my address
  config.channels = 0;
  EXPECT_THROW(connectTo({1}, addresses), Error);
  config.channels = 65;
  EXPECT_THROW(connectTo({1}, addresses), Error);
  config.channels = 1;
  config.slots = 0;
  EXPECT_THROW(connectTo({1}, addresses), Error);
}

}  // namespace
}  // namespace loom

#endif  // LOOM_HAVE_UCX
