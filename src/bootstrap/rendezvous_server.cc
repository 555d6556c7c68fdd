#include "bootstrap/rendezvous_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_parser.h"
#include "bootstrap/secret.h"
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
// One read takes at most this much, so a parser holds at most one bounded
// message plus one chunk.
constexpr size_t kReadChunk = 64 * 1024;

std::string_view asText(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

struct RendezvousServer::Client {
  Socket sock;
  std::string peer;
  Deadline helloBy = Deadline::after(kHelloTimeout);
  bool joined = false;
  bool dead = false;
  bool closeWhenFlushed = false;
  bool left = false;  // sent Leave: its disconnect is not a failure
  Nonce challenge{};  // sent on accept; the hello must MAC it
  Digest welcome{};   // the server's proof for this client, sent in Ok
  int rank = -1;
  uint32_t pid = 0;
  std::string host;
  MessageParser parser;
  bool blobPending = false;  // sent this round's blob, waiting for the others
  bool reported = false;     // has sent a Status
  PeerStatus status;
  std::chrono::steady_clock::time_point reportedAt;
  std::string pending;
  // Outbound frames, shared between clients (a gather frame goes to everyone).
  std::deque<std::shared_ptr<const std::string>> out;
  size_t outOffset = 0;

  /// "rank 3 (pid 1234 on host node7)", how other ranks' errors name it.
  std::string name() const {
    return fmt::format("rank {} (pid {} on host {})", rank, pid, host.empty() ? "?" : host);
  }
};

RendezvousServer::RendezvousServer(Socket listener, std::array<uint8_t, 16> secret, uint64_t job,
                                   std::chrono::milliseconds joinTimeout)
    : listener_(std::move(listener)),
      address_(SocketAddress::local(listener_.fd()).toString()),
      bindHost_(SocketAddress::local(listener_.fd()).host()),
      secret_(secret),
      job_(job),
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
      decideShrinkIfReady();  // a round whose window passed
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
    setNoDelay(sock.fd());
    auto client = std::make_unique<Client>();
    client->peer = SocketAddress{from, length}.toString();
    client->sock = std::move(sock);
    client->challenge = randomArray<kNonceBytes>();
    Client& added = *clients_.emplace_back(std::move(client));
    enqueue(added, std::make_shared<const std::string>(
                       frame(FrameKind::Challenge, asText(added.challenge))));
  }
}

void RendezvousServer::readFrom(Client& c) {
  // Bounded: at most 16 chunks per call, so one chatty client cannot starve
  // the others.
  char chunk[kReadChunk];
  for (int reads = 0; reads < 16 && !c.dead; ++reads) {
    const ssize_t n = ::recv(c.sock.fd(), chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n == 0) {
      drop(c, "disconnected without leaving: its process died or closed its connections",
           !c.joined && !c.closeWhenFlushed && c.parser.buffered() > 0);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      drop(c,
           fmt::format("disconnected without leaving ({}): its process died or closed its "
                       "connections",
                       std::strerror(errno)),
           !c.joined);
      return;
    }
    // A refused client's and a departed rank's further bytes mean nothing.
    if (c.closeWhenFlushed || c.left) continue;
    c.parser.feed(chunk, static_cast<size_t>(n));
    while (!c.dead && !c.closeWhenFlushed && !c.left) {
      std::optional<ClientMessage> message;
      try {
        message = c.parser.next();
      } catch (const Error& e) {
        drop(c,
             fmt::format("sent a malformed bootstrap message and was disconnected: {}", e.what()),
             true);
        return;
      }
      if (!message) break;
      switch (message->kind) {
        case ClientMessage::Kind::Hello:
          onHello(c, message->hello);
          break;
        case ClientMessage::Kind::Round:
          onBlob(c, std::move(message->blob));
          break;
        case ClientMessage::Kind::Leave:
          onLeave(c, message->blob);
          break;
        case ClientMessage::Kind::Status:
          onStatus(c, message->status);
          break;
        case ClientMessage::Kind::Query:
          onQuery(c);
          break;
        case ClientMessage::Kind::Revoke:
          onRevoke(c, message->blob);
          break;
        case ClientMessage::Kind::Shrink:
          onShrink(c, message->blob);
          break;
      }
    }
  }
}

void RendezvousServer::onHello(Client& c, const Hello& hello) {
  if (!sameBytes(hello.mac, handshakeMac(secret_, kHelloLabel, c.challenge, hello))) {
    refuse(c,
           "its hello does not prove the secret (a different unique id or LOOM_SECRET, or a "
           "replayed or forged hello)");
    return;
  }
  if (hello.job != job_) {
    refuse(c, fmt::format("rank {} is a rank of another job (job tag {:016x}; this rendezvous "
                          "serves {:016x}): two jobs share this address and secret",
                          hello.rank, hello.job, job_));
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
  c.pid = hello.pid;
  c.host = hello.host;
  c.welcome = handshakeMac(secret_, kWelcomeLabel, c.challenge, hello);
  byRank_[rank] = &c;
  ++joined_;
  LOOM_TRACE("rendezvous {}: {} of {} joined from {}", address_, c.name(), nranks_, c.peer);
  if (joined_ == nranks_) {
    allJoined_ = true;
    shrink_.emplace(nranks_);
    // No valid hello can come any more; stop listening and free the port.
    listener_.reset();
    LOOM_INFO("rendezvous {}: all {} ranks joined", address_, nranks_);
    // The rank that runs in this process, if any: its death ends the server.
    uint32_t hostRank = kNoHostRank;
    for (const Client* member : byRank_) {
      if (member->pid == static_cast<uint32_t>(::getpid()) && member->host == localHostName()) {
        hostRank = static_cast<uint32_t>(member->rank);
      }
    }
    uint8_t tail[4];
    wire::putU32(tail, hostRank);
    for (Client* member : byRank_) {
      std::string ok(asText(member->welcome));
      ok.append(asText({tail, sizeof(tail)}));
      enqueue(*member, std::make_shared<const std::string>(frame(FrameKind::Ok, ok)));
    }
  }
}

void RendezvousServer::onLeave(Client& c, const std::string& why) {
  c.left = true;
  c.blobPending = false;
  c.pending.clear();
  LOOM_TRACE("rendezvous {}: {} leaves", address_, c.name());
  if (c.pid == static_cast<uint32_t>(::getpid()) && c.host == localHostName()) {
    // This process may now exit and take the server with it while the others
    // still finish their last call: warn them that the end is not a crash,
    // and pass on why it left (the failure that made it leave names the rank
    // that failed first).
    const auto closing = std::make_shared<const std::string>(frame(FrameKind::Closing, why));
    for (Client* member : byRank_) {
      if (member != nullptr && member != &c && !member->left) enqueue(*member, closing);
    }
  }
  enqueue(c, std::make_shared<const std::string>(frame(FrameKind::Left, "")));
  if (shrink_) {
    shrink_->markGone(c.rank);
    decideShrinkIfReady();
  }
  // Before the set is complete a rank may still be replaced; nothing waits on it.
  if (!allJoined_ || !departed_.empty()) return;
  departed_ = fmt::format("{} already left the communicator{}", c.name(), leftAfter(why));
  // Ranks already waiting in a round would wait for it forever.
  for (Client* member : byRank_) {
    if (member != nullptr && member->blobPending) answerWithError(*member, departed_);
  }
}

void RendezvousServer::onStatus(Client& c, const PeerStatus& status) {
  if (!c.joined) {
    drop(c, "sent a status before its hello was accepted", true);
    return;
  }
  c.reported = true;
  c.status = status;
  c.reportedAt = std::chrono::steady_clock::now();
}

void RendezvousServer::onQuery(Client& c) {
  if (!c.joined || !allJoined_) {
    drop(c, "queried peer states before all ranks joined", true);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  std::vector<PeerReport> reports(byRank_.size());
  for (size_t r = 0; r < byRank_.size(); ++r) {
    const Client* member = byRank_[r];
    PeerReport& report = reports[r];
    if (member == nullptr || member->left) {
      report.state = PeerReport::State::Gone;
      continue;
    }
    if (!member->reported) continue;  // Silent
    report.state = member->status.busy     ? PeerReport::State::Busy
                   : member->status.failed ? PeerReport::State::Failed
                                           : PeerReport::State::Idle;
    report.status = member->status;
    report.ageMillis = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - member->reportedAt).count());
  }
  enqueue(c, std::make_shared<const std::string>(frame(FrameKind::States, encodeReports(reports))));
}

void RendezvousServer::onRevoke(Client& c, const std::string& why) {
  if (!c.joined || !allJoined_) {
    drop(c, "revoked before all ranks joined", true);
    return;
  }
  if (revokedBy_ >= 0) return;  // everyone was told already
  revokedBy_ = c.rank;
  LOOM_INFO("rendezvous {}: {} revokes the communicator", address_, c.name());
  uint8_t rank[kRevokedBytes];
  wire::putU32(rank, static_cast<uint32_t>(c.rank));
  const auto revoked = std::make_shared<const std::string>(
      frame(FrameKind::Revoked, std::string(asText({rank, kRevokedBytes})) + why));
  for (Client* member : byRank_) {
    if (member != nullptr && !member->left) enqueue(*member, revoked);
  }
}

void RendezvousServer::onShrink(Client& c, std::string_view payload) {
  if (!c.joined || !allJoined_) {
    drop(c, "asked to shrink before all ranks joined", true);
    return;
  }
  ShrinkRequest request;
  try {
    request = decodeShrinkRequest(payload, nranks_);
  } catch (const Error& e) {
    drop(c, fmt::format("sent a malformed shrink request and was disconnected: {}", e.what()),
         true);
    return;
  }
  if (shrink_->isOut(c.rank)) {
    // Out of an earlier round (excluded, or silent through its window).
    ShrinkVerdict verdict;
    verdict.out = shrink_->outRanks();
    enqueue(c, std::make_shared<const std::string>(
                   frame(FrameKind::Agreed, encodeShrinkVerdict(verdict))));
    return;
  }
  if (!shrink_->open()) LOOM_INFO("rendezvous {}: {} starts a shrink", address_, c.name());
  shrink_->ask(c.rank, request, std::chrono::steady_clock::now());
  decideShrinkIfReady();
}

void RendezvousServer::decideShrinkIfReady() {
  if (!shrink_ || !shrink_->decided(std::chrono::steady_clock::now())) return;
  ShrinkVerdict verdict;
  const std::vector<int> askers = shrink_->close(&verdict.out);
  verdict.salt = randomArray<kShrinkSaltBytes>();
  if (shrink_->survivors() > 0) verdict.port = startSurvivorsRendezvous(verdict.salt);
  LOOM_INFO("rendezvous {}: shrink agreed: {} of {} ranks stay, new rendezvous on port {}",
            address_, shrink_->survivors(), nranks_, verdict.port);
  const auto agreed =
      std::make_shared<const std::string>(frame(FrameKind::Agreed, encodeShrinkVerdict(verdict)));
  for (const int rank : askers) {
    if (byRank_[rank] != nullptr && !byRank_[rank]->left) enqueue(*byRank_[rank], agreed);
  }
}

/// The survivors' communicator gets its own rendezvous here, beside this one:
/// where this server lives (loomrun, a launcher's process) survives the ranks.
/// Returns its port, or 0 (the askers then report that no rendezvous started).
uint16_t RendezvousServer::startSurvivorsRendezvous(const ShrinkSalt& salt) {
  RendezvousOptions options;
  options.bindHost = bindHost_;
  options.secret = childSecret(secret_, kShrinkSecretLabel, salt);
  options.job = childJob(secret_, kShrinkJobLabel, salt);
  try {
    return startRendezvous(options).port;
  } catch (const Error& e) {
    LOOM_WARN("rendezvous {}: cannot start the survivors' rendezvous: {}", address_, e.what());
    return 0;
  }
}

void RendezvousServer::onBlob(Client& c, std::string blob) {
  if (!failure_.empty()) {
    answerWithError(c, failure_);
    return;
  }
  if (!departed_.empty()) {
    answerWithError(c, departed_);
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
  std::vector<std::string> blobs;
  blobs.reserve(byRank_.size());
  for (const Client* member : byRank_) {
    if (member == nullptr || !member->blobPending) return;
  }
  for (Client* member : byRank_) {
    blobs.push_back(std::move(member->pending));
    member->pending = {};
    member->blobPending = false;
  }
  const std::string payload = encodeGather(blobs);
  const auto shared = std::make_shared<const std::string>(frame(FrameKind::Gather, payload));
  for (Client* member : byRank_) enqueue(*member, shared);
}

/// Ends `c`'s current round (if any) with an error frame.
void RendezvousServer::answerWithError(Client& c, const std::string& message) {
  c.blobPending = false;
  c.pending.clear();
  enqueue(c, std::make_shared<const std::string>(
                 frame(FrameKind::Error, std::string_view(message).substr(0, kMaxErrorBytes))));
}

void RendezvousServer::refuse(Client& c, const std::string& message) {
  LOOM_WARN("rendezvous {}: refusing {}: {}", address_, c.peer, message);
  enqueue(c, std::make_shared<const std::string>(
                 frame(FrameKind::Error, message.substr(0, kMaxErrorBytes))));
  c.closeWhenFlushed = true;
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

/// `why` completes "rank R (pid P on host H) ..." in the others' error.
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
  if (shrink_) {
    // It can no longer ask: a shrink under way stops waiting for it.
    shrink_->markGone(c.rank);
    decideShrinkIfReady();
  }
  if (!allJoined_) {
    // Before the set is complete a rank may come back; forget it entirely.
    LOOM_WARN("rendezvous {}: {} left before all ranks joined: {}", address_, c.name(), why);
    if (joined_ == 0) {
      nranks_ = 0;
      byRank_.clear();
    }
    return;
  }
  if (c.left) {
    LOOM_TRACE("rendezvous {}: {} disconnected after leaving; {} still connected", address_,
               c.name(), joined_);
    return;
  }
  if (warn) LOOM_WARN("rendezvous {}: dropping {}: {}", address_, c.name(), why);
  LOOM_INFO("rendezvous {}: {} {}; {} still connected", address_, c.name(), why, joined_);
  if (failure_.empty() && joined_ > 0) {
    // Tell everyone now, not at their next round: their executors poll for
    // this (Bootstrap::checkPeers) so a dead peer is named within milliseconds.
    failure_ = fmt::format("{} {}", c.name(), why);
    for (Client* member : byRank_) {
      if (member != nullptr && !member->left) answerWithError(*member, failure_);
    }
  }
}

}  // namespace loom
