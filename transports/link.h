// A Link is a point-to-point channel to one peer, in both directions, shaped as
// a FIFO of slots. Executors speak only this interface, so every algorithm runs
// over every transport, and one test matrix covers all of them.
//
// All calls are non-blocking: they return nullptr/false when the FIFO cannot
// move yet, and the executor decides how to wait (spin, then block on the
// rank's Doorbell or poll the link's fd). Messages are never split or merged:
// the receiver asks for exactly the byte count the sender committed, which both
// sides know from the plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace loom {

/// A message arrived with another call's stamp (Link::expectStamp): the peer
/// is in a different call. InvalidUsage; the communicator names both calls.
class LinkStampMismatch : public Error {
 public:
  LinkStampMismatch(int peer, const char* transport)
      : Error(ErrorCode::InvalidUsage,
              fmt::format("rank {} sent a message of a different call over {}", peer, transport)),
        peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

class Link {
 public:
  virtual ~Link() = default;

  virtual int peer() const = 0;
  /// Transport name for logs and errors: "shm", "tcp", ...
  virtual const char* transportName() const = 0;
  /// Largest message one slot holds; executors slice steps to at most this.
  virtual size_t maxMessageBytes() const = 0;

  /// A slot to fill with `bytes` (<= maxMessageBytes) for the peer, or nullptr
  /// while the FIFO is full. Calling it again before commitSend returns the same slot.
  virtual void* trySendSlot(size_t bytes) = 0;
  /// Publishes the slot returned by trySendSlot to the peer.
  virtual void commitSend(size_t bytes) = 0;

  /// The next message from the peer once all `bytes` of it have arrived, else
  /// nullptr. Idempotent until releaseRecv. Throws Error(RemoteError) if the
  /// message in the slot does not have `bytes` bytes (ranks disagree on the plan).
  virtual const void* tryRecv(size_t bytes) = 0;
  /// Frees the message returned by tryRecv, making room for the sender.
  virtual void releaseRecv() = 0;

  /// Moves bytes for transports that need the caller's thread (tcp); returns
  /// true if anything moved. Throws Error(RemoteError) when the peer is gone.
  virtual bool progress() { return false; }
  /// True once everything committed has left this process.
  virtual bool sendsDrained() const { return true; }
  /// File descriptor to poll while idle (-1: none; the rank's Doorbell wakes us).
  virtual int pollFd() const { return -1; }
  /// With pollFd: whether the link waits to write (POLLOUT) as well as to read.
  virtual bool wantsWrite() const { return false; }

  /// Call stamps: a 32-bit fingerprint of the call (collective, count, type,
  /// op, root) that messages carry beside their size, so that ranks in
  /// different calls whose messages happen to have equal sizes fail instead
  /// of mixing data. stampSends applies to the messages committed next;
  /// tryRecv throws LinkStampMismatch when a message's stamp and the expected
  /// one are both non-zero and differ. 0 (the default) is never checked.
  /// Carried by shm, tcp and ucx; ibverbs does not carry them yet.
  void stampSends(uint32_t stamp) { sendStamp_ = stamp; }
  void expectStamp(uint32_t stamp) { recvStamp_ = stamp; }

 protected:
  /// For transports: throws unless a message stamped `got` may be received.
  void checkStamp(uint32_t got) const {
    if (got != recvStamp_ && got != 0 && recvStamp_ != 0) {
      throw LinkStampMismatch(peer(), transportName());
    }
  }
  uint32_t sendStamp_ = 0;
  uint32_t recvStamp_ = 0;
};

}  // namespace loom
