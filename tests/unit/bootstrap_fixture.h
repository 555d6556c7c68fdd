// Real rendezvous servers and ranks for the bootstrap tests, in one process.
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_protocol.h"
#include "core/socket.h"

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

/// A connection made by hand: the socket, and the challenge the server sent.
struct RawClient {
  Socket sock;
  rendezvous::Nonce challenge{};
};

/// Connects to the server of `id` and reads its challenge frame.
inline RawClient rawConnect(const UniqueId& id) {
  const Deadline deadline = Deadline::after(std::chrono::seconds(3));
  RawClient client{connectWithRetry(SocketAddress::fromHost(id.host, id.port), deadline, nullptr)};
  uint8_t header[rendezvous::kFrameHeaderBytes];
  recvAll(client.sock.fd(), header, sizeof(header), deadline, nullptr, "server");
  if (wire::getU32(header) != static_cast<uint32_t>(rendezvous::FrameKind::Challenge) ||
      wire::getU64(header + 8) != rendezvous::kNonceBytes) {
    throw Error(ErrorCode::RemoteError, "the server did not open with a challenge");
  }
  recvAll(client.sock.fd(), client.challenge.data(), client.challenge.size(), deadline, nullptr,
          "server");
  return client;
}

/// The hello a real rank `rank` of `nranks` would answer `challenge` with,
/// proving `id`'s secret (a fresh nonce, no pid or host).
inline std::string signedHello(const UniqueId& id, const rendezvous::Nonce& challenge,
                               uint32_t rank, uint32_t nranks) {
  rendezvous::Hello hello;
  hello.job = id.job;
  hello.nonce = randomArray<rendezvous::kNonceBytes>();
  hello.rank = rank;
  hello.nranks = nranks;
  hello.mac = rendezvous::handshakeMac(id.secret, rendezvous::kHelloLabel, challenge, hello);
  std::string bytes(rendezvous::kHelloBytes, '\0');
  rendezvous::encodeHello(hello, reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

}  // namespace loom::fixture
