// connectTcpLinks: builds every link of one rank in three phases that cannot
// deadlock however ranks interleave: (1) connect to all higher peers and send
// the hello (the kernel completes connects from the listen backlog, so this
// never waits on the peer's program), (2) accept and check hellos from all
// lower peers, acknowledging each, (3) read the acks of phase 1.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "core/socket.h"
#include "transports/peer_list.h"
#include "transports/tcp/tcp_link.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/tcp/tcp_wire.h"

namespace loom {
namespace {

// A connection that has not sent its hello within this long is dropped.
constexpr std::chrono::seconds kHelloTimeout{5};

struct Accepted {
  Socket sock;
  uint8_t hello[tcp::Hello::kBytes] = {};
  size_t have = 0;
  Deadline helloBy = Deadline::after(kHelloTimeout);
};

void validate(int myRank, const std::vector<int>& peers, size_t worldSize,
              const TcpConfig& config) {
  if (config.slots < 1 || config.slotBytes < 1 || config.slotBytes > (1u << 30) ||
      config.socketsPerPeer < 1 || config.socketsPerPeer > 64 || config.channels < 1 ||
      config.channels * config.socketsPerPeer > 64) {
    raise(ErrorCode::InvalidArgument,
          "tcp config out of range: slots={} (>= 1), slotBytes={} (1..1 GiB), socketsPerPeer={} "
          "x channels={} (at most 64 sockets per peer)",
          config.slots, config.slotBytes, config.socketsPerPeer, config.channels);
  }
  checkPeerList("tcp", myRank, peers, worldSize);
}

size_t socketsPerPeer(const TcpConfig& config) {
  return static_cast<size_t>(config.socketsPerPeer) * static_cast<size_t>(config.channels);
}

// Phase 2: accepts until every expected (rank, socket) pair has said hello.
void acceptLowerPeers(TcpListener& listener, int myRank, const LinkCredentials& credentials,
                      const TcpConfig& config, std::map<int, std::vector<Socket>>& lower,
                      Deadline deadline, const std::atomic<bool>* abortFlag) {
  const size_t sockets = socketsPerPeer(config);
  auto missing = [&] {
    std::vector<int> ranks;
    for (const auto& [rank, socks] : lower) {
      if (std::any_of(socks.begin(), socks.end(), [](const Socket& s) { return !s.valid(); })) {
        ranks.push_back(rank);
      }
    }
    return ranks;
  };
  const uint64_t commTag = credentials.commTag;
  std::vector<Accepted> pending;
  while (!missing().empty()) {
    if (abortFlag != nullptr && abortFlag->load()) {
      raise(ErrorCode::Aborted, "tcp: rank {} aborted while waiting for peers to connect", myRank);
    }
    if (deadline.expired()) {
      raise(ErrorCode::RemoteError, "tcp: rank {} timed out waiting for ranks {} to connect",
            myRank, fmt::join(missing(), ", "));
    }
    std::vector<pollfd> fds{{listener.fd(), POLLIN, 0}};
    for (const auto& a : pending) fds.push_back({a.sock.fd(), POLLIN, 0});
    const int n =
        ::poll(fds.data(), fds.size(),
               static_cast<int>(deadline.remaining(std::chrono::milliseconds(100)).count()));
    if (n < 0 && errno != EINTR) raiseErrno("poll while accepting tcp links");
    if ((fds[0].revents & POLLIN) != 0) {
      for (;;) {
        Socket sock(::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!sock.valid()) break;
        if (pending.size() >= 4096) continue;  // a flood of strays: refuse
        pending.push_back({std::move(sock)});
      }
    }
    for (auto& a : pending) {
      const ssize_t got =
          ::recv(a.sock.fd(), a.hello + a.have, sizeof(a.hello) - a.have, MSG_DONTWAIT);
      if (got > 0) a.have += static_cast<size_t>(got);
      if ((got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) ||
          (a.have < sizeof(a.hello) && a.helloBy.expired())) {
        LOOM_WARN("tcp: rank {} dropping a connection that sent no complete hello", myRank);
        a.sock.reset();
        continue;
      }
      if (a.have < sizeof(a.hello)) continue;
      tcp::Hello hello;
      std::string why;
      if (!hello.decode(a.hello)) {
        why = "not a Loom tcp hello";
      } else if (hello.commTag != commTag) {
        why = fmt::format("communicator tag {:016x}, expected {:016x}", hello.commTag, commTag);
      } else if (!sameBytes(hello.mac,
                            hello.expectedMac(credentials.key, static_cast<uint32_t>(myRank),
                                              listener.address()))) {
        why = fmt::format("rank {}'s hello does not prove the communicator's key", hello.rank);
      } else if (!listener.firstUse(hello.nonce)) {
        why = fmt::format("rank {}'s hello is a replay (its nonce was used before)", hello.rank);
      } else if (lower.count(static_cast<int>(hello.rank)) == 0 || hello.rank > 1u << 30) {
        why = fmt::format("rank {} is not a lower peer of rank {}", hello.rank, myRank);
      } else if (hello.socketsPerLink != config.socketsPerPeer ||
                 hello.channels != config.channels || hello.socketIndex >= sockets ||
                 hello.slotBytes != config.slotBytes) {
        why = fmt::format(
            "socket {} of {} channel(s) x {} with {} byte slots; expected {} channel(s) x {}, {} "
            "byte slots",
            hello.socketIndex, hello.channels, hello.socketsPerLink, hello.slotBytes,
            config.channels, config.socketsPerPeer, config.slotBytes);
      } else if (lower[hello.rank][hello.socketIndex].valid()) {
        why = fmt::format("rank {} socket {} connected twice", hello.rank, hello.socketIndex);
      }
      if (!why.empty()) {
        LOOM_WARN("tcp: rank {} refusing a connection: {}", myRank, why);
        a.sock.reset();
        continue;
      }
      tcp::Ack answer{commTag, static_cast<uint32_t>(myRank)};
      answer.mac = answer.expectedMac(credentials.key, hello.nonce);
      uint8_t ack[tcp::Ack::kBytes];
      answer.encode(ack);
      sendAll(a.sock.fd(), ack, sizeof(ack), deadline, abortFlag,
              fmt::format("rank {} (tcp handshake)", hello.rank));
      lower[hello.rank][hello.socketIndex] = std::move(a.sock);
    }
    std::erase_if(pending, [](const Accepted& a) { return !a.sock.valid(); });
  }
}

}  // namespace

std::vector<std::unique_ptr<Link>> connectTcpLinks(TcpListener& listener,
                                                   const ConnectRequest& request,
                                                   const TcpConfig& config) {
  validate(request.myRank, request.peers, request.peerAddresses.size(), config);
  const size_t sockets = socketsPerPeer(config);
  const uint64_t commTag = request.credentials.commTag;
  std::map<int, std::vector<Socket>> higher;
  std::map<int, std::vector<tcp::Nonce>> sentNonces;
  std::map<int, std::vector<Socket>> lower;
  for (int p : request.peers) (p > request.myRank ? higher : lower)[p].resize(sockets);

  // Phase 1: connect and say hello.
  for (auto& [p, socks] : higher) {
    const SocketAddress address = SocketAddress::parse(request.peerAddresses[p]);
    for (size_t s = 0; s < sockets; ++s) {
      socks[s] = connectWithRetry(address, request.deadline, request.abortFlag);
      tcp::Hello mine{commTag,
                      static_cast<uint32_t>(request.myRank),
                      static_cast<uint32_t>(s),
                      static_cast<uint16_t>(config.socketsPerPeer),
                      static_cast<uint16_t>(config.channels),
                      static_cast<uint32_t>(config.slotBytes),
                      randomArray<tcp::kNonceBytes>()};
      mine.mac = mine.expectedMac(request.credentials.key, static_cast<uint32_t>(p),
                                  request.peerAddresses[p]);
      sentNonces[p].push_back(mine.nonce);
      uint8_t hello[tcp::Hello::kBytes];
      mine.encode(hello);
      sendAll(socks[s].fd(), hello, sizeof(hello), request.deadline, request.abortFlag,
              fmt::format("rank {} at {}", p, request.peerAddresses[p]));
    }
  }
  // Phase 2: accept from lower peers.
  acceptLowerPeers(listener, request.myRank, request.credentials, config, lower, request.deadline,
                   request.abortFlag);
  // Phase 3: the higher peers' acks.
  for (auto& [p, socks] : higher) {
    for (size_t s = 0; s < socks.size(); ++s) {
      const Socket& sock = socks[s];
      uint8_t bytes[tcp::Ack::kBytes];
      const std::string who = fmt::format("rank {} at {}", p, request.peerAddresses[p]);
      try {
        recvAll(sock.fd(), bytes, sizeof(bytes), request.deadline, request.abortFlag, who);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::RemoteError) throw;
        raise(ErrorCode::RemoteError,
              "tcp: {} refused the handshake of rank {} (different communicator tag or config?): "
              "{}",
              who, request.myRank, e.what());
      }
      tcp::Ack ack;
      if (!ack.decode(bytes) || ack.commTag != commTag || ack.rank != static_cast<uint32_t>(p)) {
        raise(ErrorCode::RemoteError, "tcp: {} answered the handshake of rank {} wrongly", who,
              request.myRank);
      }
      if (!sameBytes(ack.mac, ack.expectedMac(request.credentials.key, sentNonces[p][s]))) {
        raise(ErrorCode::RemoteError,
              "tcp: {} does not prove the communicator's key: not the peer rank {} expected", who,
              request.myRank);
      }
    }
  }

  std::vector<std::unique_ptr<Link>> links;
  const auto perLink = static_cast<size_t>(config.socketsPerPeer);
  links.reserve(request.peers.size() * static_cast<size_t>(config.channels));
  for (size_t channel = 0; channel < static_cast<size_t>(config.channels); ++channel) {
    for (int p : request.peers) {
      auto& socks = p > request.myRank ? higher[p] : lower[p];
      std::vector<Socket> mine;
      for (size_t s = 0; s < perLink; ++s) mine.push_back(std::move(socks[channel * perLink + s]));
      links.push_back(std::make_unique<TcpLink>(p, std::move(mine), config));
    }
  }
  LOOM_INFO("tcp: rank {} connected {} links ({} channel(s), {} sockets each)", request.myRank,
            links.size(), config.channels, perLink);
  return links;
}

}  // namespace loom
