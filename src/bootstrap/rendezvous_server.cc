#include "bootstrap/rendezvous_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "bootstrap/rendezvous_protocol.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/log.h"

namespace loom {
namespace {

using namespace rendezvous;

// A hello must arrive this soon after accept, or the connection is dropped:
// a silent stray cannot hold a slot forever.
constexpr std::chrono::seconds kHelloTimeout{5};
// Connections that have not said hello yet; beyond this, new ones are closed.
constexpr size_t kMaxPending = 4096;
// A correct client never has more than a few unread frames (ok, one gather, one
// error); more means it does not read, and it is dropped to bound memory.
constexpr size_t kMaxQueuedFrames = 8;

}  // namespace

struct RendezvousServer::Client {
  Socket sock;
  std::string peer;
  Deadline helloBy = Deadline::after(kHelloTimeout);
  bool joined = false;
  bool dead = false;
  bool closeWhenFlushed = false;
  int rank = -1;
  // Inbound: the hello, then rounds of {u32 length, bytes}.
  std::string in;
  size_t have = 0;
  bool haveLength = false;
  bool blobPending = false;  // sent this round's blob, waiting for the others
  std::string pending;
  // Outbound frames, shared between clients (a gather frame goes to everyone).
  std::deque<std::shared_ptr<const std::string>> out;
  size_t outOffset = 0;
};

RendezvousServer::RendezvousServer(Socket listener, std::array<uint8_t, 16> secret,
                                   std::chrono::milliseconds joinTimeout)
    : listener_(std::move(listener)),
      address_(SocketAddress::local(listener_.fd()).toString()),
      secret_(secret),
      joinTimeout_(joinTimeout) {}

RendezvousServer::~RendezvousServer() = default;

void RendezvousServer::run() {
  const Deadline joinDeadline = Deadline::after(joinTimeout_);
  try {
    for (;;) {
      if (!allJoined_ && joinDeadline.expired()) {
        LOOM_WARN("rendezvous {}: only {} of {} ranks joined within LOOM_TIMEOUT ({} s); closing",
                  address_, joined_, nranks_, joinTimeout_.count() / 1000);
        break;
      }
      if (allJoined_ && joined_ == 0) break;
      loopOnce();
    }
  } catch (const std::exception& e) {
    LOOM_WARN("rendezvous {}: server stopped: {}", address_, e.what());
  }
  LOOM_INFO("rendezvous {}: server thread exits", address_);
}

void RendezvousServer::loopOnce() {
  std::vector<pollfd> fds;
  fds.reserve(clients_.size() + 1);
  if (listener_.valid()) fds.push_back({listener_.fd(), POLLIN, 0});
  for (const auto& c : clients_) {
    fds.push_back({c->sock.fd(), static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
  }
  // 100 ms slices: hello timeouts and the join deadline are checked between polls.
  const int n = ::poll(fds.data(), fds.size(), 100);
  if (n < 0 && errno != EINTR) raiseErrno("rendezvous poll");
  size_t index = 0;
  const bool listenReady = listener_.valid() && (fds[index++].revents & POLLIN) != 0;
  const size_t polledClients = clients_.size();
  for (size_t i = 0; i < polledClients; ++i, ++index) {
    Client& c = *clients_[i];
    const short revents = n > 0 ? fds[index].revents : 0;
    if (!c.dead && (revents & (POLLOUT | POLLERR)) != 0) writeTo(c);
    if (!c.dead && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) readFrom(c);
    if (!c.dead && !c.joined && !c.closeWhenFlushed && c.helloBy.expired()) {
      drop(c, "no hello within 5 s", true);
    }
  }
  if (listenReady) acceptPending();
  std::erase_if(clients_, [](const std::unique_ptr<Client>& c) { return c->dead; });
}

void RendezvousServer::acceptPending() {
  for (;;) {
    sockaddr_storage from{};
    socklen_t length = sizeof(from);
    Socket sock(::accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&from), &length,
                          SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!sock.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or a transient error (EMFILE): try again next round
    }
    const size_t pending =
        std::count_if(clients_.begin(), clients_.end(), [](const auto& c) { return !c->joined; });
    if (pending >= kMaxPending) {
      LOOM_WARN("rendezvous {}: {} connections without hello; refusing another", address_, pending);
      continue;  // Socket closes it
    }
    auto client = std::make_unique<Client>();
    client->peer = SocketAddress{from, length}.toString();
    client->sock = std::move(sock);
    client->in.resize(kHelloBytes);
    clients_.push_back(std::move(client));
  }
}

void RendezvousServer::readFrom(Client& c) {
  // Bounded: at most one hello or one blob per call, so one chatty client
  // cannot starve the others.
  for (int reads = 0; reads < 16 && !c.dead; ++reads) {
    const size_t want = c.in.size() - c.have;
    const ssize_t n = ::recv(c.sock.fd(), c.in.data() + c.have, want, MSG_DONTWAIT);
    if (n == 0) {
      drop(c, "connection closed", !c.joined && !c.closeWhenFlushed && c.have > 0);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      drop(c, fmt::format("receive failed: {}", std::strerror(errno)), !c.joined);
      return;
    }
    c.have += static_cast<size_t>(n);
    if (c.have < c.in.size()) continue;
    if (c.closeWhenFlushed) {  // refused: ignore whatever else it says
      c.have = 0;
      continue;
    }
    if (!c.joined) {
      onHello(c);
      return;
    }
    if (!c.haveLength) {
      const uint32_t length = wire::getU32(reinterpret_cast<const uint8_t*>(c.in.data()));
      if (length > kMaxBlobBytes) {
        drop(c,
             fmt::format("all-gather blob of {} bytes exceeds the {} byte limit", length,
                         kMaxBlobBytes),
             true);
        return;
      }
      c.haveLength = true;
      c.in.assign(length, '\0');
      c.have = 0;
      if (length > 0) continue;
    }
    std::string blob = std::move(c.in);
    c.in.assign(4, '\0');
    c.have = 0;
    c.haveLength = false;
    onBlob(c, std::move(blob));
    return;
  }
}

void RendezvousServer::onHello(Client& c) {
  Hello hello;
  if (!decodeHello(reinterpret_cast<const uint8_t*>(c.in.data()), &hello)) {
    drop(c, "not a Loom bootstrap client (bad magic)", true);
    return;
  }
  if (!sameSecret(hello.secret, secret_)) {
    drop(c, "wrong secret (a different unique id?)", true);
    return;
  }
  const auto rank = static_cast<int64_t>(hello.rank);
  const auto nranks = static_cast<int64_t>(hello.nranks);
  if (nranks < 1 || nranks > kMaxRanks || rank >= nranks) {
    refuse(c, fmt::format("rank {} of {} is invalid (need 0 <= rank < nranks <= {})", rank, nranks,
                          kMaxRanks));
    return;
  }
  if (allJoined_) {
    refuse(c, fmt::format("rank {} joined after all {} ranks had joined", rank, nranks_));
    return;
  }
  if (nranks_ != 0 && nranks != nranks_) {
    refuse(c, fmt::format("rank {} says nranks={} but the ranks that joined first say {}", rank,
                          nranks, nranks_));
    return;
  }
  if (nranks_ == 0) {
    nranks_ = static_cast<int>(nranks);
    byRank_.assign(nranks_, nullptr);
  }
  if (byRank_[rank] != nullptr) {
    refuse(c, fmt::format("rank {} of {} joined twice (from {} and {})", rank, nranks_,
                          byRank_[rank]->peer, c.peer));
    return;
  }
  c.joined = true;
  c.rank = static_cast<int>(rank);
  c.in.assign(4, '\0');
  c.have = 0;
  byRank_[rank] = &c;
  ++joined_;
  LOOM_TRACE("rendezvous {}: rank {} of {} joined from {}", address_, rank, nranks_, c.peer);
  if (joined_ == nranks_) {
    allJoined_ = true;
    // No valid hello can come any more; stop listening and free the port.
    listener_.reset();
    LOOM_INFO("rendezvous {}: all {} ranks joined", address_, nranks_);
    const auto ok = std::make_shared<const std::string>(frame(FrameKind::Ok, ""));
    for (Client* member : byRank_) enqueue(*member, ok);
  }
}

void RendezvousServer::onBlob(Client& c, std::string blob) {
  if (!failure_.empty()) {
    enqueue(c, std::make_shared<const std::string>(frame(FrameKind::Error, failure_)));
    return;
  }
  if (c.blobPending) {
    drop(c, "sent a second all-gather blob before the round completed", true);
    return;
  }
  c.blobPending = true;
  c.pending = std::move(blob);
  completeRoundIfReady();
}

void RendezvousServer::completeRoundIfReady() {
  if (!allJoined_ || !failure_.empty()) return;
  size_t total = 0;
  for (const Client* member : byRank_) {
    if (member == nullptr || !member->blobPending) return;
    total += 4 + member->pending.size();
  }
  std::string payload = frameHeader(FrameKind::Gather, total);
  payload.reserve(kFrameHeaderBytes + total);
  for (Client* member : byRank_) {
    uint8_t length[4];
    wire::putU32(length, static_cast<uint32_t>(member->pending.size()));
    payload.append(reinterpret_cast<const char*>(length), 4);
    payload += member->pending;
    member->pending.clear();
    member->pending.shrink_to_fit();
    member->blobPending = false;
  }
  const auto shared = std::make_shared<const std::string>(std::move(payload));
  for (Client* member : byRank_) enqueue(*member, shared);
}

void RendezvousServer::refuse(Client& c, const std::string& message) {
  LOOM_WARN("rendezvous {}: refusing {}: {}", address_, c.peer, message);
  enqueue(c, std::make_shared<const std::string>(
                 frame(FrameKind::Error, message.substr(0, kMaxErrorBytes))));
  c.closeWhenFlushed = true;
  c.in.assign(kHelloBytes, '\0');
  c.have = 0;
}

void RendezvousServer::enqueue(Client& c, std::shared_ptr<const std::string> frame) {
  if (c.dead) return;
  if (c.out.size() >= kMaxQueuedFrames) {
    drop(c, "does not read its replies", true);
    return;
  }
  c.out.push_back(std::move(frame));
  writeTo(c);
}

void RendezvousServer::writeTo(Client& c) {
  while (!c.out.empty()) {
    const std::string& front = *c.out.front();
    const ssize_t n = ::send(c.sock.fd(), front.data() + c.outOffset, front.size() - c.outOffset,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      drop(c, fmt::format("send failed: {}", std::strerror(errno)), false);
      return;
    }
    c.outOffset += static_cast<size_t>(n);
    if (c.outOffset == front.size()) {
      c.out.pop_front();
      c.outOffset = 0;
    }
  }
  if (c.closeWhenFlushed) drop(c, "refused", false);
}

void RendezvousServer::drop(Client& c, const std::string& why, bool warn) {
  if (c.dead) return;
  c.dead = true;
  c.sock.reset();
  c.out.clear();
  if (!c.joined) {
    if (warn) LOOM_WARN("rendezvous {}: dropping connection from {}: {}", address_, c.peer, why);
    return;
  }
  byRank_[c.rank] = nullptr;
  --joined_;
  if (!allJoined_) {
    // Before the set is complete a rank may come back; forget it entirely.
    LOOM_WARN("rendezvous {}: rank {} left before all ranks joined: {}", address_, c.rank, why);
    if (joined_ == 0) {
      nranks_ = 0;
      byRank_.clear();
    }
    return;
  }
  if (warn) LOOM_WARN("rendezvous {}: dropping rank {}: {}", address_, c.rank, why);
  LOOM_INFO("rendezvous {}: rank {} disconnected ({}); {} still connected", address_, c.rank, why,
            joined_);
  if (failure_.empty() && joined_ > 0) {
    // The others may be waiting in an all-gather that can no longer complete.
    failure_ = fmt::format("rank {} disconnected from the bootstrap ({})", c.rank, why);
    const auto error = std::make_shared<const std::string>(frame(FrameKind::Error, failure_));
    for (Client* member : byRank_) {
      if (member != nullptr) enqueue(*member, error);
    }
  }
}

}  // namespace loom
