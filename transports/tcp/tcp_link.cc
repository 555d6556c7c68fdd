#include "transports/tcp/tcp_link.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "transports/tcp/tcp_wire.h"

namespace loom {
namespace {

// Below this many bytes per socket a message is not worth cutting further.
constexpr size_t kMinStripeBytes = 64 * 1024;
constexpr int kSocketBufferBytes = 4 << 20;

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

}  // namespace

TcpLink::TcpLink(int peer, std::vector<Socket> sockets, const TcpConfig& config)
    : peer_(peer),
      slotBytes_(config.slotBytes),
      slots_(static_cast<uint64_t>(config.slots)),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      sendData_(config.slots * config.slotBytes),
      sendLength_(config.slots),
      sendHeader_(config.slots * tcp::kMessageHeaderBytes),
      recvData_(config.slots * config.slotBytes),
      recvLength_(config.slots),
      recvStampOf_(config.slots),
      recvHeader_(config.slots * tcp::kMessageHeaderBytes) {
  if (!epoll_.valid()) raiseErrno("epoll_create1 for tcp link");
  if (config.slotBytes > UINT32_MAX) {
    raise(ErrorCode::InvalidArgument, "tcp slots of {} bytes: the message header holds 32 bits",
          config.slotBytes);
  }
  for (auto& sock : sockets) {
    setNonBlocking(sock.fd());
    setNoDelay(sock.fd());
    setBufferSizes(sock.fd(), kSocketBufferBytes);
    Stream stream;
    stream.sock = std::move(sock);
    streams_.push_back(std::move(stream));
  }
  for (size_t s = 0; s < streams_.size(); ++s) {
    epoll_event event{};
    event.data.u64 = s;
    if (::epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, streams_[s].sock.fd(), &event) != 0) {
      raiseErrno("epoll_ctl(ADD) for tcp link");
    }
  }
  updateInterest();
}

TcpLink::~TcpLink() = default;

TcpLink::Range TcpLink::partOf(size_t length, size_t stream) const {
  const size_t parts = std::clamp<size_t>(length / kMinStripeBytes, 1, streams_.size());
  if (stream >= parts) return {0, 0};
  return {stream * length / parts, (stream + 1) * length / parts};
}

void* TcpLink::trySendSlot(size_t bytes) {
  if (bytes > slotBytes_) {
    raise(ErrorCode::InvalidArgument,
          "tcp link to rank {}: message of {} bytes exceeds the {} byte slot", peer_, bytes,
          slotBytes_);
  }
  if (sendHead_ - sendTail_ >= slots_) return nullptr;
  return sendSlot(sendHead_);
}

void TcpLink::commitSend(size_t bytes) {
  if (bytes > slotBytes_ || sendHead_ - sendTail_ >= slots_) {
    raise(ErrorCode::InternalError, "tcp link to rank {}: commitSend({}) without a free slot",
          peer_, bytes);
  }
  const uint64_t slot = sendHead_ % slots_;
  sendLength_[slot] = bytes;
  uint8_t* header = &sendHeader_[slot * tcp::kMessageHeaderBytes];
  tcp::putU32(header, tcp::kMessageMagic);
  tcp::putU32(header + 4, static_cast<uint32_t>(sendHead_));
  tcp::putU32(header + 8, static_cast<uint32_t>(bytes));
  tcp::putU32(header + 12, sendStamp_);
  ++sendHead_;
  progress();
}

bool TcpLink::messageArrived(uint64_t message) const {
  for (const Stream& stream : streams_) {
    if (stream.recvMessage <= message) return false;
  }
  return true;
}

const void* TcpLink::tryRecv(size_t bytes) {
  const uint64_t message = recvTail_;
  if (recvHeaders_ > message) {
    const uint64_t sent = recvLength_[message % slots_];
    if (sent != bytes) {
      raise(ErrorCode::RemoteError,
            "tcp link from rank {}: message {} expected {} bytes, peer sent {} (ranks disagree on "
            "the plan)",
            peer_, message, bytes, sent);
    }
    checkStamp(recvStampOf_[message % slots_]);
    for (size_t s = 1; s < streams_.size(); ++s) skipEmptyParts(s);
  }
  if (messageArrived(message)) return recvSlot(message);
  for (const Stream& stream : streams_) {
    if (stream.eof && stream.recvMessage <= message) closed("while a message was expected");
  }
  return nullptr;
}

void TcpLink::releaseRecv() {
  if (!messageArrived(recvTail_)) {
    raise(ErrorCode::InternalError, "tcp link from rank {}: releaseRecv without a message", peer_);
  }
  ++recvTail_;
  updateInterest();
}

bool TcpLink::progress() {
  bool moved = false;
  // Socket 0 first: its headers tell the other sockets what their parts are.
  for (size_t s = 0; s < streams_.size(); ++s) moved |= pumpRecv(s);
  for (size_t s = 0; s < streams_.size(); ++s) moved |= pumpSend(s);
  uint64_t tail = sendHead_;
  for (const Stream& stream : streams_) tail = std::min(tail, stream.sendMessage);
  sendTail_ = tail;
  updateInterest();
  return moved;
}

bool TcpLink::pumpSend(size_t s) {
  Stream& st = streams_[s];
  const size_t headerBytes = s == 0 ? tcp::kMessageHeaderBytes : 0;
  bool moved = false;
  while (st.sendMessage < sendHead_) {
    const uint64_t slot = st.sendMessage % slots_;
    const Range part = partOf(sendLength_[slot], s);
    const size_t total = headerBytes + (part.end - part.begin);
    if (st.sendOffset < total) {
      iovec iov[2];
      int count = 0;
      if (st.sendOffset < headerBytes) {
        iov[count++] = {&sendHeader_[slot * tcp::kMessageHeaderBytes + st.sendOffset],
                        headerBytes - st.sendOffset};
        iov[count++] = {sendSlot(st.sendMessage) + part.begin, part.end - part.begin};
      } else {
        const size_t done = st.sendOffset - headerBytes;
        iov[count++] = {sendSlot(st.sendMessage) + part.begin + done, part.end - part.begin - done};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = count;
      const ssize_t n = ::sendmsg(st.sock.fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        if (wouldBlock(errno)) break;
        closed(errno == EPIPE || errno == ECONNRESET ? "(connection reset)" : std::strerror(errno));
      }
      st.sendOffset += static_cast<size_t>(n);
      moved = true;
      if (st.sendOffset < total) continue;
    }
    ++st.sendMessage;
    st.sendOffset = 0;
  }
  return moved;
}

void TcpLink::skipEmptyParts(size_t s) {
  Stream& st = streams_[s];
  while (st.recvMessage < recvHeaders_ && st.recvOffset == 0 &&
         partOf(recvLength_[st.recvMessage % slots_], s).end == 0) {
    ++st.recvMessage;
  }
}

bool TcpLink::pumpRecv(size_t s) {
  Stream& st = streams_[s];
  if (st.eof) return false;
  const size_t headerBytes = s == 0 ? tcp::kMessageHeaderBytes : 0;
  bool moved = false;
  for (;;) {
    if (s > 0) skipEmptyParts(s);
    const uint64_t message = st.recvMessage;
    // A free slot is needed, and on sockets > 0 the header (read from socket 0).
    if (message >= recvTail_ + slots_ || (s > 0 && message >= recvHeaders_)) break;
    const uint64_t slot = message % slots_;
    uint8_t* target;
    size_t want;
    if (st.recvOffset < headerBytes) {
      target = &recvHeader_[slot * tcp::kMessageHeaderBytes + st.recvOffset];
      want = headerBytes - st.recvOffset;
    } else {
      const Range part = partOf(recvLength_[slot], s);
      const size_t done = st.recvOffset - headerBytes;
      target = recvSlot(message) + part.begin + done;
      want = part.end - part.begin - done;
    }
    if (want > 0) {
      const ssize_t n = ::recv(st.sock.fd(), target, want, MSG_DONTWAIT);
      if (n == 0) {
        // The peer closed. Not an error yet: everything it sent has been read,
        // and it may have finished with this link. tryRecv raises if we still
        // wait for a message from it; pumpSend raises if we still write to it.
        st.eof = true;
        ::epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, st.sock.fd(), nullptr);
        st.interest = 0;
        break;
      }
      if (n < 0) {
        if (wouldBlock(errno)) break;
        closed(errno == ECONNRESET ? "(connection reset)" : std::strerror(errno));
      }
      st.recvOffset += static_cast<size_t>(n);
      moved = true;
      if (static_cast<size_t>(n) < want) continue;
    }
    if (s == 0 && st.recvOffset == headerBytes) {
      const uint8_t* header = &recvHeader_[slot * tcp::kMessageHeaderBytes];
      const uint32_t magic = tcp::getU32(header);
      const uint32_t sequence = tcp::getU32(header + 4);
      const uint64_t length = tcp::getU32(header + 8);
      if (magic != tcp::kMessageMagic || sequence != static_cast<uint32_t>(message) ||
          length > slotBytes_) {
        raise(ErrorCode::RemoteError,
              "tcp link from rank {}: corrupt header for message {} (magic {:08x}, sequence {}, "
              "length {} of at most {})",
              peer_, message, magic, sequence, length, slotBytes_);
      }
      recvLength_[slot] = length;
      recvStampOf_[slot] = tcp::getU32(header + 12);
      recvHeaders_ = message + 1;
    }
    const Range part = partOf(recvLength_[slot], s);
    if (st.recvOffset == headerBytes + (part.end - part.begin)) {
      ++st.recvMessage;
      st.recvOffset = 0;
    }
  }
  return moved;
}

void TcpLink::updateInterest() {
  for (size_t s = 0; s < streams_.size(); ++s) {
    Stream& st = streams_[s];
    if (st.eof) continue;
    if (s > 0) skipEmptyParts(s);
    uint32_t want = 0;
    if (st.recvMessage < recvTail_ + slots_ && (s == 0 || st.recvMessage < recvHeaders_)) {
      want |= EPOLLIN;
    }
    if (st.sendMessage < sendHead_) want |= EPOLLOUT;
    if (want == st.interest) continue;
    epoll_event event{};
    event.events = want;
    event.data.u64 = s;
    if (::epoll_ctl(epoll_.fd(), EPOLL_CTL_MOD, st.sock.fd(), &event) != 0) {
      raiseErrno("epoll_ctl(MOD) for tcp link");
    }
    st.interest = want;
  }
}

void TcpLink::closed(const char* how) const {
  raise(ErrorCode::RemoteError, "tcp link to rank {} closed {}", peer_, how);
}

}  // namespace loom
