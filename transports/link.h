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
#include <string>

namespace loom {

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
};

}  // namespace loom
