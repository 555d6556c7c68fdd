// Bootstrap::join and the client side of the rendezvous protocol: one socket
// to the server, used for the hello and then for every all-gather round.
#include <algorithm>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_protocol.h"
#include "core/error.h"
#include "core/log.h"
#include "core/socket.h"

namespace loom {
namespace {

using namespace rendezvous;

struct Frame {
  FrameKind kind;
  std::string payload;
};

class BootstrapClient final : public Bootstrap {
 public:
  BootstrapClient(Socket sock, std::string server, int rank, int nranks,
                  const std::atomic<bool>* abortFlag)
      : sock_(std::move(sock)),
        server_(std::move(server)),
        rank_(rank),
        nranks_(nranks),
        abortFlag_(abortFlag) {}

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  /// Waits for the server's verdict on our hello.
  void awaitJoined(Deadline deadline) {
    const Frame reply = readFrame(deadline, /*maxPayload=*/kMaxErrorBytes);
    if (reply.kind == FrameKind::Error) {
      raise(ErrorCode::InvalidUsage, "bootstrap at {} refused rank {} of {}: {}", server_, rank_,
            nranks_, reply.payload);
    }
    if (reply.kind != FrameKind::Ok) {
      raise(ErrorCode::RemoteError, "bootstrap at {} answered the hello of rank {} with frame {}",
            server_, rank_, static_cast<uint32_t>(reply.kind));
    }
  }

  std::vector<std::string> allGather(const std::string& mine, Deadline deadline) override {
    if (mine.size() > kMaxBlobBytes) {
      raise(ErrorCode::InvalidArgument, "bootstrap all-gather blob of {} bytes exceeds {} bytes",
            mine.size(), kMaxBlobBytes);
    }
    if (!broken_.empty()) {
      raise(ErrorCode::RemoteError, "bootstrap connection of rank {} unusable after: {}", rank_,
            broken_);
    }
    try {
      return exchange(mine, deadline);
    } catch (const Error& e) {
      // A partial round leaves the stream out of step; later rounds must not
      // read garbage.
      broken_ = e.what();
      throw;
    }
  }

  void barrier(Deadline deadline) override { allGather({}, deadline); }

 private:
  std::vector<std::string> exchange(const std::string& mine, Deadline deadline) {
    std::string message(4, '\0');
    wire::putU32(reinterpret_cast<uint8_t*>(message.data()), static_cast<uint32_t>(mine.size()));
    message += mine;
    sendAll(sock_.fd(), message.data(), message.size(), deadline, abortFlag_, peerName());

    const uint64_t maxPayload = static_cast<uint64_t>(nranks_) * (4 + kMaxBlobBytes);
    Frame reply = readFrame(deadline, maxPayload);
    if (reply.kind == FrameKind::Error) {
      raise(ErrorCode::RemoteError, "bootstrap all-gather on rank {} failed: {}", rank_,
            reply.payload);
    }
    if (reply.kind != FrameKind::Gather) protocolError("unexpected frame kind in all-gather");
    return parseGather(reply.payload);
  }

  std::vector<std::string> parseGather(const std::string& payload) const {
    std::vector<std::string> blobs;
    blobs.reserve(nranks_);
    size_t at = 0;
    for (int r = 0; r < nranks_; ++r) {
      if (payload.size() - at < 4) protocolError("gather frame too short for its lengths");
      const uint32_t length = wire::getU32(reinterpret_cast<const uint8_t*>(payload.data() + at));
      at += 4;
      if (length > kMaxBlobBytes || payload.size() - at < length) {
        protocolError("gather frame blob length out of bounds");
      }
      blobs.emplace_back(payload, at, length);
      at += length;
    }
    if (at != payload.size()) protocolError("gather frame has trailing bytes");
    return blobs;
  }

  Frame readFrame(Deadline deadline, uint64_t maxPayload) {
    uint8_t header[kFrameHeaderBytes];
    recvAll(sock_.fd(), header, sizeof(header), deadline, abortFlag_, peerName());
    const auto kind = static_cast<FrameKind>(wire::getU32(header));
    const uint64_t length = wire::getU64(header + 8);
    if (kind != FrameKind::Ok && kind != FrameKind::Error && kind != FrameKind::Gather) {
      protocolError(fmt::format("unknown frame kind {}", wire::getU32(header)));
    }
    const uint64_t limit = kind == FrameKind::Error ? kMaxErrorBytes : maxPayload;
    if (wire::getU32(header + 4) != 0 || length > limit) {
      protocolError(fmt::format("frame length {} over its bound {}", length, limit));
    }
    Frame frame{kind, std::string(length, '\0')};
    recvAll(sock_.fd(), frame.payload.data(), length, deadline, abortFlag_, peerName());
    return frame;
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
  std::string broken_;
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

  Hello hello;
  hello.secret = id.secret;
  hello.rank = static_cast<uint32_t>(rank);
  hello.nranks = static_cast<uint32_t>(nranks);
  uint8_t bytes[kHelloBytes];
  encodeHello(hello, bytes);
  const std::string peer = fmt::format("bootstrap server {} (rank {} joining)", server, rank);
  sendAll(sock.fd(), bytes, sizeof(bytes), deadline, abortFlag, peer);
  auto client = std::make_unique<BootstrapClient>(std::move(sock), server, rank, nranks, abortFlag);
  try {
    client->awaitJoined(deadline);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::RemoteError) throw;
    raise(ErrorCode::RemoteError, "rank {} of {} could not join the bootstrap at {}: {}", rank,
          nranks, server, e.what());
  }
  LOOM_TRACE("rank {} of {} joined the bootstrap at {}", rank, nranks, server);
  return client;
}

}  // namespace loom
