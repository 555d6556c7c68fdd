// Bootstrap::join and the client side of the rendezvous protocol: one socket
// to the server, used for the hello, every all-gather round, and the server's
// unsolicited reports of dead ranks (read by checkPeers between rounds).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_parser.h"
#include "core/error.h"
#include "core/log.h"
#include "core/socket.h"

namespace loom {
namespace {

using namespace rendezvous;

// One recv reads at most this much (on the caller's stack); between rounds
// frames are small, and a large gather simply takes several reads.
constexpr size_t kReadChunk = 16 * 1024;
// A status report is 32 bytes into an idle socket; if even that cannot be
// sent at once, the connection is in trouble and checkPeers will say so.
constexpr std::chrono::milliseconds kStatusSendLimit{100};
// How long leaving waits for the server's acknowledgement.
constexpr std::chrono::seconds kLeaveLimit{1};
// How long a revoke waits for another thread's use of the connection, and
// for its message to go out.
constexpr std::chrono::milliseconds kRevokeLimit{200};

class BootstrapClient final : public Bootstrap {
 public:
  BootstrapClient(Socket sock, std::string server, int rank, int nranks,
                  const std::atomic<bool>* abortFlag)
      : sock_(std::move(sock)),
        server_(std::move(server)),
        rank_(rank),
        nranks_(nranks),
        abortFlag_(abortFlag),
        parser_(nranks) {}

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  /// Answers the server's challenge with `hello` (MACed with `secret`) and
  /// waits for its verdict, which must prove the secret back.
  void handshake(Hello hello, const std::array<uint8_t, 16>& secret, Deadline deadline) {
    std::lock_guard lock(mu_);
    const Frame challenge = remembering([&] { return waitFrame(deadline); });
    refuseOnError(challenge);
    if (challenge.kind != FrameKind::Challenge || challenge.payload.size() != kNonceBytes) {
      remembering([&] {
        protocolError(fmt::format("frame kind {} of {} bytes instead of a challenge",
                                  static_cast<uint32_t>(challenge.kind), challenge.payload.size()));
      });
    }
    Nonce nonce{};
    std::memcpy(nonce.data(), challenge.payload.data(), kNonceBytes);
    hello.mac = handshakeMac(secret, kHelloLabel, nonce, hello);
    uint8_t bytes[kHelloBytes];
    encodeHello(hello, bytes);
    remembering(
        [&] { sendAll(sock_.fd(), bytes, sizeof(bytes), deadline, abortFlag_, peerName()); });
    const Frame reply = remembering([&] { return waitFrame(deadline); });
    refuseOnError(reply);
    if (reply.kind != FrameKind::Ok) {
      fail(ErrorCode::RemoteError,
           fmt::format("bootstrap at {} answered the hello of rank {} with frame kind {}", server_,
                       rank_, static_cast<uint32_t>(reply.kind)));
    }
    const Digest expected = handshakeMac(secret, kWelcomeLabel, nonce, hello);
    // The parser checked the size: kOkBytes.
    const auto* ok = reinterpret_cast<const uint8_t*>(reply.payload.data());
    const std::span<const uint8_t> proof(ok, kMacBytes);
    if (!sameBytes(proof, expected)) {
      fail(ErrorCode::RemoteError,
           fmt::format("the server at {} does not prove the secret of this unique id (another "
                       "job's rendezvous on that port, or an impostor): rank {} does not join",
                       server_, rank_));
    }
    const uint32_t hostRank = wire::getU32(ok + kMacBytes);
    if (hostRank != kNoHostRank && hostRank >= static_cast<uint32_t>(nranks_)) {
      fail(ErrorCode::RemoteError,
           fmt::format("bootstrap at {} names host rank {} of {}", server_, hostRank, nranks_));
    }
    hostRank_ = hostRank == kNoHostRank ? -1 : static_cast<int>(hostRank);
  }

  std::vector<std::string> allGather(const std::string& mine, Deadline deadline) override {
    if (mine.size() > kMaxBlobBytes) {
      raise(ErrorCode::InvalidArgument, "bootstrap all-gather blob of {} bytes exceeds {} bytes",
            mine.size(), kMaxBlobBytes);
    }
    std::lock_guard lock(mu_);
    throwIfFailed();
    if (left_) {
      raise(ErrorCode::InvalidUsage, "rank {} all-gathers after it left the bootstrap", rank_);
    }
    // Any error, even a timeout, leaves the stream out of step (our blob may
    // be in a round that completes later), so it sticks for every later call.
    return remembering([&] {
      const std::string round = message(MessageKind::Round, mine);
      sendAll(sock_.fd(), round.data(), round.size(), deadline, abortFlag_, peerName());
      const Frame reply = waitFrame(deadline);
      if (reply.kind == FrameKind::Error) fail(ErrorCode::RemoteError, reply.payload);
      if (reply.kind != FrameKind::Gather) {
        protocolError(
            fmt::format("frame kind {} in an all-gather round", static_cast<uint32_t>(reply.kind)));
      }
      try {
        return decodeGather(reply.payload, nranks_);
      } catch (const Error& e) {
        protocolError(e.what());
      }
    });
  }

  void barrier(Deadline deadline) override { allGather({}, deadline); }

  void checkPeers() override {
    // Once revoked, that is the news: ranks that leave a revoked communicator
    // without a goodbye are no failure of their own.
    throwIfRevoked();
    throwIfFailed();
    // Another thread in allGather owns the socket and surfaces any error
    // itself; waiting for it here would make this call blocking.
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || left_) return;
    remembering([&] {
      readAvailable();
      // Between rounds the server only ever sends error, closing and revoked frames.
      while (auto frame = nextFrame()) {
        if (absorbNotice(*frame)) continue;
        if (frame->kind == FrameKind::Error) {
          if (revokedBy_.load() >= 0) {
            remember(ErrorCode::RemoteError, frame->payload);  // for later rounds
            continue;
          }
          fail(ErrorCode::RemoteError, frame->payload);
        }
        protocolError(fmt::format("unsolicited frame kind {} between all-gather rounds",
                                  static_cast<uint32_t>(frame->kind)));
      }
      // After a Closing frame the end of the connection is expected: liveness
      // reports stop, and links or LOOM_TIMEOUT catch any later failure.
      if (eof_ && !serverClosing_ && revokedBy_.load() < 0) serverClosed();
    });
    // Not remembered: a revoked communicator's rounds still complete while
    // every rank stays connected, so the survivors can agree on what comes next.
    throwIfRevoked();
  }

  void throwIfRevoked() {
    const int by = revokedBy_.load();
    if (by < 0) return;
    if (!revokedOnMismatch_.empty() && !mismatchReported_.exchange(true)) {
      raise(ErrorCode::InvalidUsage,
            "rank {} found ranks in different calls and revoked the communicator, so that no "
            "rank waits for its deadline: {}",
            by, revokedOnMismatch_);
    }
    raise(ErrorCode::Revoked, "rank {} revoked the communicator ({})", by,
          revokedOnMismatch_.empty() ? "loomCommRevoke" : "it found ranks in different calls");
  }

  void revoke(std::string_view mismatch) override {
    std::unique_lock lock(mu_, std::defer_lock);
    const Deadline deadline = Deadline::after(kRevokeLimit);
    while (!lock.try_lock()) {
      if (deadline.expired()) {
        LOOM_WARN(
            "rank {}: the bootstrap is busy in another thread; the revoke reaches only the "
            "ranks of this host",
            rank_);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (left_ || failed_.load(std::memory_order_acquire)) return;
    try {
      const std::string bytes = message(MessageKind::Revoke, mismatch.substr(0, kMaxErrorBytes));
      sendAll(sock_.fd(), bytes.data(), bytes.size(), deadline, nullptr, peerName());
    } catch (const Error& e) {
      // A partial write leaves the stream out of step: nothing more can be said on it.
      remember(ErrorCode::RemoteError, e.what());
      LOOM_WARN("rank {}: could not tell the rendezvous of the revoke: {}", rank_, e.what());
    }
  }

  int revokedBy() const override { return revokedBy_.load(); }

  std::string revokedOnMismatch() const override {
    return revokedBy_.load() >= 0 ? revokedOnMismatch_ : std::string();
  }

  bool reportStatus(const PeerStatus& mine) override {
    if (failed_.load(std::memory_order_acquire)) return false;
    // Called from a waiting executor: never wait for another thread's round.
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || left_) return false;
    try {
      const std::string bytes = message(MessageKind::Status, encodeStatus(mine));
      sendAll(sock_.fd(), bytes.data(), bytes.size(), Deadline::after(kStatusSendLimit), abortFlag_,
              peerName());
      return true;
    } catch (const Error& e) {
      // Best effort: a connection that fails here fails again in checkPeers,
      // which reports it properly.
      LOOM_TRACE("rank {}: status report not sent: {}", rank_, e.what());
      return false;
    }
  }

  std::vector<PeerReport> queryStatuses(Deadline deadline) override {
    // No throwIfFailed: the caller is reporting a failure already, and the
    // states of the ranks still alive (a dead one shows as Gone) say more
    // than the first failure alone.
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) {
      raise(ErrorCode::InvalidUsage, "rank {}: bootstrap busy in another thread", rank_);
    }
    if (left_) raise(ErrorCode::InvalidUsage, "rank {} queries after it left the bootstrap", rank_);
    if (eof_) serverClosed();
    const std::string query = message(MessageKind::Query, "");
    sendAll(sock_.fd(), query.data(), query.size(), deadline, abortFlag_, peerName());
    for (;;) {
      const Frame reply = remembering([&] { return waitFrame(deadline); });
      if (reply.kind == FrameKind::Error) {
        remember(ErrorCode::RemoteError, reply.payload);  // sticky for every other call
        continue;
      }
      if (reply.kind != FrameKind::States) {
        remembering([&] {
          protocolError(
              fmt::format("frame kind {} answering a query", static_cast<uint32_t>(reply.kind)));
        });
      }
      try {
        return decodeReports(reply.payload, nranks_);
      } catch (const Error& e) {
        remembering([&] { protocolError(e.what()); });
      }
    }
  }

  ShrinkVerdict agreeToShrink(const ShrinkRequest& request, Deadline deadline) override {
    std::lock_guard lock(mu_);
    if (left_) raise(ErrorCode::InvalidUsage, "rank {} shrinks after it left the bootstrap", rank_);
    if (eof_) serverClosed();
    const std::string bytes = message(MessageKind::Shrink, encodeShrinkRequest(request));
    sendAll(sock_.fd(), bytes.data(), bytes.size(), deadline, abortFlag_, peerName());
    for (;;) {
      const Frame reply = waitFrame(deadline);
      switch (reply.kind) {
        case FrameKind::Agreed:
          try {
            return decodeShrinkVerdict(reply.payload, nranks_);
          } catch (const Error& e) {
            protocolError(e.what());
          }
        case FrameKind::Error:
          // The failure that led to this shrink, most likely; rounds still fail with it.
          remember(ErrorCode::RemoteError, reply.payload);
          continue;
        case FrameKind::Gather:
        case FrameKind::States:
          continue;  // the late answer to a round or query this rank gave up on
        default:
          protocolError(fmt::format("frame kind {} while waiting for a shrink verdict",
                                    static_cast<uint32_t>(reply.kind)));
      }
    }
  }

  void leave(std::string_view why) override {
    std::lock_guard lock(mu_);
    if (left_) return;
    left_ = true;
    try {
      const std::string bye = message(MessageKind::Leave, why.substr(0, kMaxErrorBytes));
      const Deadline deadline = Deadline::after(kLeaveLimit);
      sendAll(sock_.fd(), bye.data(), bye.size(), deadline, abortFlag_, peerName());
      awaitLeft(deadline);
      // The server sees Leave then EOF and forgets us at once.
      ::shutdown(sock_.fd(), SHUT_WR);
    } catch (const Error&) {
      // A connection that already failed has nobody left to tell.
      if (!failed_.load(std::memory_order_acquire)) throw;
    }
  }

 private:
  /// Waits (bounded) for the server's answer to Leave: if this process runs
  /// the server, returning earlier could let the process exit before the
  /// others were told that its end is not a crash. Failures here mean the
  /// server is gone already; there is nobody left to tell.
  void awaitLeft(Deadline deadline) {
    try {
      for (;;) {
        if (waitFrame(deadline).kind == FrameKind::Left) return;
      }
    } catch (const Error&) {
    }
  }

  /// Runs `body`; an Error it throws becomes the sticky failure.
  template <typename Body>
  auto remembering(Body body) -> decltype(body()) {
    try {
      return body();
    } catch (const Error& e) {
      remember(e.code(), e.what());
      throw;
    }
  }

  void remember(ErrorCode code, const std::string& message) {
    if (failed_.load(std::memory_order_acquire)) return;
    // Written once, before the flag: readers that see the flag see the text.
    failureCode_ = code;
    failure_ = message;
    failed_.store(true, std::memory_order_release);
  }

  [[noreturn]] void fail(ErrorCode code, const std::string& message) {
    remember(code, message);
    throw Error(failureCode_, failure_);
  }

  void throwIfFailed() const {
    if (failed_.load(std::memory_order_acquire)) throw Error(failureCode_, failure_);
  }

  std::optional<Frame> nextFrame() {
    try {
      return parser_.next();
    } catch (const Error& e) {
      protocolError(e.what());
    }
  }

  /// Reads whatever the socket holds now, without waiting (a recv with
  /// MSG_DONTWAIT is the zero-timeout poll and the read in one system call).
  void readAvailable() {
    char chunk[kReadChunk];
    while (!eof_) {
      const ssize_t n = ::recv(sock_.fd(), chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n > 0) {
        parser_.feed(chunk, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof(chunk)) return;
        continue;
      }
      if (n == 0) {
        eof_ = true;  // frames before the EOF are still delivered first
        return;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      raise(ErrorCode::RemoteError, "connection to {} failed while receiving: {}", peerName(),
            std::strerror(errno));
    }
  }

  Frame waitFrame(Deadline deadline) {
    for (;;) {
      if (auto frame = nextFrame()) {
        if (absorbNotice(*frame)) continue;
        return std::move(*frame);
      }
      if (eof_) serverClosed();
      waitReady(sock_.fd(), POLLIN, deadline, abortFlag_, peerName());
      readAvailable();
    }
  }

  // Closing and revoked frames may come at any time: they change what later
  // errors mean, not the round in progress. True when `frame` was one.
  bool absorbNotice(const Frame& frame) {
    if (frame.kind == FrameKind::Closing) {
      serverClosing_ = true;
      hostLeftAfter_ = frame.payload;  // bounded by the parser
      return true;
    }
    if (frame.kind == FrameKind::Revoked) {
      noteRevoked(frame);
      return true;
    }
    return false;
  }

  void noteRevoked(const Frame& frame) {
    // The parser checked the payload's size.
    const uint32_t by = wire::getU32(reinterpret_cast<const uint8_t*>(frame.payload.data()));
    if (by >= static_cast<uint32_t>(nranks_)) protocolError(fmt::format("revoked by rank {}", by));
    if (revokedBy_.load() >= 0) return;  // announced once; nothing to change
    // Written once, under mu_, before revokedBy_ publishes it to other threads.
    revokedOnMismatch_ = frame.payload.substr(kRevokedBytes);
    revokedBy_.store(static_cast<int>(by));
  }

  void refuseOnError(const Frame& frame) const {
    if (frame.kind == FrameKind::Error) {
      raise(ErrorCode::InvalidUsage, "bootstrap at {} refused rank {} of {}: {}", server_, rank_,
            nranks_, frame.payload);
    }
  }

  [[noreturn]] void serverClosed() const {
    // The host rank said it was leaving (destroyed or aborted its communicator,
    // often because of another rank's failure): it did not die, and the call
    // still waiting here cannot complete without it.
    if (hostRank_ >= 0 && serverClosing_) {
      const std::string after = leftAfter(hostLeftAfter_);
      raise(ErrorCode::RemoteError,
            "rank {} left this communicator (destroyed or aborted it){}, and its process, which "
            "ran the bootstrap server {}, has ended; rank {} still needed the communicator",
            hostRank_, after, server_, rank_);
    }
    if (hostRank_ >= 0) {
      raise(ErrorCode::RemoteError,
            "rank {} died or exited: its process ran the bootstrap server {}, which closed its "
            "connection to rank {}",
            hostRank_, server_, rank_);
    }
    raise(ErrorCode::RemoteError,
          "bootstrap server {} closed its connection to rank {} (the process that created the "
          "unique id exited?)",
          server_, rank_);
  }

  [[noreturn]] void protocolError(const std::string& what) const {
    raise(ErrorCode::RemoteError, "bootstrap server {} sent a malformed reply to rank {}: {}",
          server_, rank_, what);
  }

  std::string peerName() const {
    return fmt::format("bootstrap server {} (rank {} of {})", server_, rank_, nranks_);
  }

  Socket sock_;
  std::string server_;
  int rank_;
  int nranks_;
  const std::atomic<bool>* abortFlag_;
  // Guards the socket and the parser: one caller reads the stream at a time.
  std::mutex mu_;
  // Keeps a frame that arrived in pieces across calls (checkPeers may read
  // half of one, the next allGather the rest).
  FrameParser parser_;
  bool eof_ = false;
  bool serverClosing_ = false;  // the server's process announced it is leaving
  std::string hostLeftAfter_;   // ... and the first error its calls met (Closing)
  std::atomic<int> revokedBy_{-1};
  std::string revokedOnMismatch_;  // the Revoked frame's why
  std::atomic<bool> mismatchReported_{false};
  int hostRank_ = -1;  // the rank whose process runs the server, if one does
  bool left_ = false;
  // The first error, rethrown by every later call.
  std::atomic<bool> failed_{false};
  ErrorCode failureCode_ = ErrorCode::RemoteError;
  std::string failure_;
};

}  // namespace

std::unique_ptr<Bootstrap> Bootstrap::join(const UniqueId& id, int rank, int nranks,
                                           Deadline deadline, const std::atomic<bool>* abortFlag) {
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    raise(ErrorCode::InvalidArgument, "rank {} of {} is invalid (need 0 <= rank < nranks <= {})",
          rank, nranks, kMaxRanks);
  }
  if (id.port == 0) raise(ErrorCode::InvalidArgument, "malformed unique id: port 0");
  const SocketAddress address = SocketAddress::fromHost(id.host, id.port);
  const std::string server = address.toString();
  Socket sock = connectWithRetry(address, deadline, abortFlag);
  // Status reports and queries are small writes back to back; Nagle would
  // hold the second until the first is acknowledged (up to 40 ms).
  setNoDelay(sock.fd());

  Hello hello;
  hello.job = id.job;
  hello.nonce = randomArray<kNonceBytes>();
  hello.rank = static_cast<uint32_t>(rank);
  hello.nranks = static_cast<uint32_t>(nranks);
  hello.pid = static_cast<uint32_t>(::getpid());
  hello.host = localHostName();
  auto client = std::make_unique<BootstrapClient>(std::move(sock), server, rank, nranks, abortFlag);
  try {
    client->handshake(hello, id.secret, deadline);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::RemoteError) throw;
    raise(ErrorCode::RemoteError, "rank {} of {} could not join the bootstrap at {}: {}", rank,
          nranks, server, e.what());
  }
  LOOM_TRACE("rank {} of {} joined the bootstrap at {}", rank, nranks, server);
  return client;
}

}  // namespace loom
