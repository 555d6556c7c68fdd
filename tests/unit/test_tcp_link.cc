#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/socket.h"
#include "link_traffic.h"
#include "transports/tcp/tcp_transport.h"
#include "unit/tcp_mesh.h"

namespace loom {
namespace {

using namespace std::chrono_literals;

using link_traffic::byteOf;
using link_traffic::exchange;
using link_traffic::waitIdle;

struct Shape {
  int nranks;
  int sockets;
  int channels = 1;
};

class TcpExchange : public ::testing::TestWithParam<Shape> {};

TEST_P(TcpExchange, ManyMessagesBothDirections) {
  TcpConfig config;
  config.slotBytes = 256 * 1024;
  config.slots = 4;
  config.socketsPerPeer = GetParam().sockets;
  config.channels = GetParam().channels;
  const int nranks = GetParam().nranks;
  auto links = connectAll(nranks, config, std::vector<uint64_t>(nranks, 0xabc));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    ASSERT_EQ(links[r].size(), static_cast<size_t>((nranks - 1) * config.channels));
    threads.emplace_back([&, r] { exchange(r, links[r], 40, config.slotBytes); });
  }
  for (auto& t : threads) t.join();
}

INSTANTIATE_TEST_SUITE_P(Shapes, TcpExchange,
                         ::testing::Values(Shape{2, 1}, Shape{2, 3}, Shape{4, 1}, Shape{4, 2},
                                           Shape{2, 2, 3}, Shape{3, 1, 2}));

// Channel c of rank 0 meets channel c of rank 1, and no other.
TEST(TcpLink, ChannelsAreSeparateFifos) {
  for (int sockets : {1, 2}) {
    TcpConfig config;
    config.socketsPerPeer = sockets;
    config.channels = 4;
    auto links = connectAll(2, config, {5, 5});
    link_traffic::channelsStayApart(links[0], links[1]);
    link_traffic::channelsStayApart(links[1], links[0]);
  }
}

// Both ranks commit a full FIFO of large messages and wait until their sends
// drain before receiving anything. 24 MiB per direction is more than the
// kernel's socket buffers hold (4 MiB each way at most), so this completes
// only because progress() reads ahead into the receive slots.
TEST(TcpLink, SendsDrainWhileBothSidesSend) {
  TcpConfig config;
  config.slotBytes = 8 << 20;
  config.slots = 3;
  config.socketsPerPeer = 2;
  auto links = connectAll(2, config, {7, 7});
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Link& link = *links[r][0];
      for (int m = 0; m < config.slots; ++m) {
        auto* slot = static_cast<uint8_t*>(link.trySendSlot(config.slotBytes));
        ASSERT_NE(slot, nullptr);  // at most `slots` messages are outstanding
        for (size_t b = 0; b < config.slotBytes; ++b) slot[b] = byteOf(r, 1 - r, m, b);
        link.commitSend(config.slotBytes);
      }
      const Deadline deadline = Deadline::after(10s);
      while (!link.sendsDrained()) {
        ASSERT_FALSE(deadline.expired()) << "rank " << r << " could not drain its sends";
        if (!link.progress()) waitIdle(links[r]);
      }
      for (int m = 0; m < config.slots; ++m) {
        const uint8_t* data = nullptr;
        while ((data = static_cast<const uint8_t*>(link.tryRecv(config.slotBytes))) == nullptr) {
          ASSERT_FALSE(deadline.expired());
          if (!link.progress()) waitIdle(links[r]);
        }
        for (size_t b = 0; b < config.slotBytes; b += 4099) {
          ASSERT_EQ(data[b], byteOf(1 - r, r, m, b));
        }
        link.releaseRecv();
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(TcpLink, SizeMismatchIsRemoteError) {
  TcpConfig config;
  config.socketsPerPeer = 1;
  auto links = connectAll(2, config, {1, 1});
  std::memset(links[0][0]->trySendSlot(10), 1, 10);
  links[0][0]->commitSend(10);
  const Deadline deadline = Deadline::after(5s);
  try {
    while (links[1][0]->tryRecv(11) == nullptr) {
      ASSERT_FALSE(deadline.expired());
      links[1][0]->progress();
      waitIdle(links[1]);
    }
    ADD_FAILURE() << "mismatch not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("expected 11 bytes, peer sent 10"), std::string::npos)
        << e.what();
  }
}

TEST(TcpLink, CallStampsTravelWithMessages) {
  TcpConfig config;
  config.socketsPerPeer = 2;
  auto links = connectAll(2, config, {1, 1});
  // A striped message (two sockets) and a small one, stamped 9 and 10.
  for (const auto& [bytes, stamp] : {std::pair<size_t, uint32_t>{200000, 9}, {10, 10}}) {
    links[0][0]->stampSends(stamp);
    std::memset(links[0][0]->trySendSlot(bytes), 1, bytes);
    links[0][0]->commitSend(bytes);
  }
  const Deadline deadline = Deadline::after(5s);
  links[1][0]->expectStamp(9);
  while (links[1][0]->tryRecv(200000) == nullptr) {
    ASSERT_FALSE(deadline.expired());
    links[0][0]->progress();
    links[1][0]->progress();
  }
  links[1][0]->releaseRecv();
  links[1][0]->expectStamp(11);
  try {
    while (links[1][0]->tryRecv(10) == nullptr) {
      ASSERT_FALSE(deadline.expired());
      links[0][0]->progress();
      links[1][0]->progress();
    }
    ADD_FAILURE() << "stamp mismatch not detected";
  } catch (const LinkStampMismatch& e) {
    EXPECT_EQ(e.peer(), 0);
  }
}

TEST(TcpLink, PeerClosingIsRemoteError) {
  TcpConfig config;
  auto links = connectAll(2, config, {2, 2});
  links[1].clear();  // rank 1 goes away
  Link& link = *links[0][0];
  const Deadline deadline = Deadline::after(5s);
  try {
    for (;;) {
      ASSERT_FALSE(deadline.expired()) << "closed peer not noticed";
      link.progress();
      if (link.tryRecv(8) != nullptr) break;
      waitIdle(links[0]);
    }
    ADD_FAILURE() << "received from a closed peer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::RemoteError);
    EXPECT_NE(std::string(e.what()).find("tcp link to rank 1 closed"), std::string::npos)
        << e.what();
  }
}

TEST(TcpLink, PollFdWakesWhenDataArrives) {
  TcpConfig config;
  auto links = connectAll(2, config, {3, 3});
  pollfd idle{links[1][0]->pollFd(), POLLIN, 0};
  EXPECT_EQ(::poll(&idle, 1, 50), 0);  // nothing to do: not readable
  std::memset(links[0][0]->trySendSlot(100), 5, 100);
  links[0][0]->commitSend(100);
  pollfd ready{links[1][0]->pollFd(), POLLIN, 0};
  EXPECT_EQ(::poll(&ready, 1, 2000), 1);
  links[1][0]->progress();
  const auto* data = static_cast<const uint8_t*>(links[1][0]->tryRecv(100));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data[99], 5);
}

TEST(TcpLink, WrongCommTagIsRefused) {
  TcpConfig config;
  std::vector<std::string> errors;
  const auto start = std::chrono::steady_clock::now();
  connectAll(2, config, {0x111, 0x222}, &errors, 1500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(errors[0].find("refused the handshake"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("timed out waiting for ranks 0"), std::string::npos) << errors[1];
}

TEST(TcpLink, WrongKeyIsRefused) {
  TcpConfig config;
  std::vector<std::string> errors;
  Digest other = sharedTestKey();
  other[0] ^= 1;
  connectAll(2, config, {7, 7}, &errors, 1500ms, {sharedTestKey(), other});
  EXPECT_NE(errors[0].find("refused the handshake"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("timed out waiting for ranks 0"), std::string::npos) << errors[1];
}

// A hello as rank 0 would send it to rank 1 at `to`: key-proved, fresh nonce.
std::string signedHello(const LinkCredentials& credentials, const TcpConfig& config,
                        const std::string& to) {
  tcp::Hello hello{credentials.commTag,
                   0,
                   0,
                   static_cast<uint16_t>(config.socketsPerPeer),
                   static_cast<uint16_t>(config.channels),
                   static_cast<uint32_t>(config.slotBytes),
                   randomArray<tcp::kNonceBytes>()};
  hello.mac = hello.expectedMac(credentials.key, 1, to);
  std::string bytes(tcp::Hello::kBytes, '\0');
  hello.encode(reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

// Rank 1 accepts rank 0 on `listener`; rank 0 is a raw socket that sends `hello`.
// Returns rank 1's error ("" when it connected) and whether rank 0 got a valid ack.
std::pair<std::string, bool> acceptRawHello(TcpListener& listener,
                                            const LinkCredentials& credentials,
                                            const TcpConfig& config, const std::string& hello) {
  const std::vector<std::string> addresses{"127.0.0.1:1", listener.address()};
  std::string error;
  std::thread rank1([&] {
    try {
      connectTcpLinks(listener, {1, {0}, addresses, credentials, Deadline::after(1500ms)}, config);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  Socket rank0 =
      connectWithRetry(SocketAddress::parse(listener.address()), Deadline::after(2s), nullptr);
  sendAll(rank0.fd(), hello.data(), hello.size(), Deadline::after(2s), nullptr, "rank 1");
  uint8_t bytes[tcp::Ack::kBytes];
  bool acked = false;
  try {
    recvAll(rank0.fd(), bytes, sizeof(bytes), Deadline::after(3s), nullptr, "rank 1");
    tcp::Ack ack;
    tcp::Hello sent;
    sent.decode(reinterpret_cast<const uint8_t*>(hello.data()));
    acked = ack.decode(bytes) && ack.rank == 1 &&
            sameBytes(ack.mac, ack.expectedMac(credentials.key, sent.nonce));
  } catch (const Error&) {
    // Refused: the connection closed without an ack.
  }
  rank1.join();
  return {error, acked};
}

TEST(TcpLink, ReplayedHelloIsRefused) {
  TcpConfig config;
  config.socketsPerPeer = 1;
  TcpListener listener("127.0.0.1");
  const LinkCredentials credentials{9, sharedTestKey()};
  const std::string hello = signedHello(credentials, config, listener.address());
  const auto [firstError, firstAcked] = acceptRawHello(listener, credentials, config, hello);
  EXPECT_EQ(firstError, "");
  EXPECT_TRUE(firstAcked) << "the acceptor's ack must prove the key";
  // The same bytes again, as a sniffer would send them: the nonce is spent.
  const auto [replayError, replayAcked] = acceptRawHello(listener, credentials, config, hello);
  EXPECT_FALSE(replayAcked);
  EXPECT_NE(replayError.find("timed out waiting for ranks 0"), std::string::npos) << replayError;
  // A fresh hello from the same rank is still welcome.
  const auto [freshError, freshAcked] = acceptRawHello(
      listener, credentials, config, signedHello(credentials, config, listener.address()));
  EXPECT_EQ(freshError, "");
  EXPECT_TRUE(freshAcked);
  // A hello made for another listener (another communicator of the same job
  // has the same key) is refused here even with a fresh nonce.
  TcpListener other("127.0.0.1");
  const auto [strayError, strayAcked] = acceptRawHello(
      listener, credentials, config, signedHello(credentials, config, other.address()));
  EXPECT_FALSE(strayAcked);
  EXPECT_NE(strayError.find("timed out waiting for ranks 0"), std::string::npos) << strayError;
}

TEST(TcpLink, InvalidPeersAndConfigRejected) {
  TcpListener listener("127.0.0.1");
  TcpConfig config;
  const std::vector<std::string> addresses{listener.address(), listener.address()};
  EXPECT_THROW(connectTcpLinks(listener, {0, {0}, addresses, {1, {}}, Deadline::after(1s)}, config),
               Error);
  EXPECT_THROW(connectTcpLinks(listener, {0, {2}, addresses, {1, {}}, Deadline::after(1s)}, config),
               Error);
  config.slots = 0;
  EXPECT_THROW(connectTcpLinks(listener, {0, {1}, addresses, {1, {}}, Deadline::after(1s)}, config),
               Error);
  config = TcpConfig{};
  config.channels = 0;
  EXPECT_THROW(connectTcpLinks(listener, {0, {1}, addresses, {1, {}}, Deadline::after(1s)}, config),
               Error);
  config.channels = 33;  // x 2 sockets: more than 64 per peer
  EXPECT_THROW(connectTcpLinks(listener, {0, {1}, addresses, {1, {}}, Deadline::after(1s)}, config),
               Error);
}

}  // namespace
}  // namespace loom
