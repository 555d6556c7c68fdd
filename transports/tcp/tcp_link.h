// TcpLink: a Link over one or more TCP sockets to one peer.
//
// Each direction has `slots` staging buffers of `slotBytes`. Sending copies
// into a free staging slot (trySendSlot), commitSend queues it and writes what
// the socket takes; progress() writes the rest and, independently, reads
// incoming messages into free receive slots. Reading ahead is what keeps two
// ranks that send to each other at once from deadlocking: each drains the
// other's bytes while its own are still queued.
//
// Framing and striping: socket 0 carries a 16-byte header (magic, sequence,
// length) before every message. A message of L bytes is cut into
// n = clamp(L / 64 KiB, 1, socketsPerPeer) contiguous parts; part s travels on
// socket s. Both sides compute the same cut from L, so sockets without a part
// in a message simply skip it, and small messages cost one socket and no extra
// headers.
//
// Waiting: pollFd() is an epoll descriptor holding every socket with the
// interest the link currently has (read while a receive slot is free, write
// while bytes are queued). It is readable whenever progress() could move
// something, so wantsWrite() is always false.
#pragma once

#include <cstdint>
#include <vector>

#include "core/socket.h"
#include "transports/link.h"
#include "transports/tcp/tcp_transport.h"

namespace loom {

class TcpLink final : public Link {
 public:
  /// Takes connected, handshaken sockets, socket i being stripe i.
  TcpLink(int peer, std::vector<Socket> sockets, const TcpConfig& config);
  ~TcpLink() override;

  int peer() const override { return peer_; }
  const char* transportName() const override { return "tcp"; }
  size_t maxMessageBytes() const override { return slotBytes_; }

  void* trySendSlot(size_t bytes) override;
  void commitSend(size_t bytes) override;
  const void* tryRecv(size_t bytes) override;
  void releaseRecv() override;

  bool progress() override;
  bool sendsDrained() const override { return sendTail_ == sendHead_; }
  int pollFd() const override { return epoll_.fd(); }
  bool wantsWrite() const override { return false; }

 private:
  struct Stream {
    Socket sock;
    uint64_t sendMessage = 0;  // index of the message being written
    size_t sendOffset = 0;     // bytes of it written (header included on socket 0)
    uint64_t recvMessage = 0;
    size_t recvOffset = 0;
    bool eof = false;
    uint32_t interest = 0;  // epoll events registered now
  };
  struct Range {
    size_t begin;
    size_t end;
  };

  Range partOf(size_t length, size_t stream) const;
  bool pumpSend(size_t stream);
  bool pumpRecv(size_t stream);
  void skipEmptyParts(size_t stream);
  void updateInterest();
  bool messageArrived(uint64_t message) const;
  [[noreturn]] void closed(const char* how) const;
  uint8_t* sendSlot(uint64_t message) { return &sendData_[(message % slots_) * slotBytes_]; }
  uint8_t* recvSlot(uint64_t message) { return &recvData_[(message % slots_) * slotBytes_]; }

  int peer_;
  size_t slotBytes_;
  uint64_t slots_;
  std::vector<Stream> streams_;
  Socket epoll_;

  std::vector<uint8_t> sendData_;
  std::vector<uint64_t> sendLength_;
  std::vector<uint8_t> sendHeader_;  // kMessageHeaderBytes per slot
  uint64_t sendHead_ = 0;            // messages committed
  uint64_t sendTail_ = 0;            // messages fully written on every socket

  std::vector<uint8_t> recvData_;
  std::vector<uint64_t> recvLength_;
  std::vector<uint32_t> recvStampOf_;  // each received slot's call stamp
  std::vector<uint8_t> recvHeader_;
  uint64_t recvHeaders_ = 0;  // messages whose header has been read
  uint64_t recvTail_ = 0;     // messages released by the consumer
};

}  // namespace loom
