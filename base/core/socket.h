// Small socket utilities shared by bootstrap and the tcp transport: an owning
// fd, numeric addresses, connect with retry, and send/recv loops that honour a
// Deadline and an abort flag, so no socket wait in Loom can hang.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/deadline.h"

namespace loom {

/// Owns one file descriptor and closes it on destruction. Movable, not copyable.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  /// Gives up ownership without closing.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes the current fd (if any) and takes `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// A numeric IPv4 or IPv6 socket address.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  /// Parses "host:port", "[v6]:port" (or a bare "v6" with `port` given below).
  /// Throws InvalidArgument naming the text when it is not a numeric address.
  static SocketAddress parse(const std::string& hostPort);
  /// Numeric `host` ("10.0.0.1", "::1") and `port`; throws InvalidArgument.
  static SocketAddress fromHost(const std::string& host, uint16_t port);
  /// The local address `fd` is bound to (getsockname).
  static SocketAddress local(int fd);

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  /// Numeric host without port or brackets.
  std::string host() const;
  /// "host:port" or "[v6]:port".
  std::string toString() const;
};

/// Formats "host:port", bracketing IPv6 hosts.
std::string formatHostPort(const std::string& host, uint16_t port);

/// The numeric local address to bind and advertise: LOOM_SOCKET_IFNAME's
/// address if set; else the address that routes to `routeTo` (numeric, may be
/// empty); else the first up, non-loopback interface; else 127.0.0.1. The
/// choice is logged at INFO.
std::string chooseLocalHost(const std::string& routeTo = "");

/// A non-blocking, listening TCP socket on `host`:`port` (0: any port).
Socket listenTcp(const std::string& host, uint16_t port, int backlog = SOMAXCONN);

/// Connects to `address`, retrying refused/unreachable attempts (the server may
/// not listen yet) with a short backoff until `deadline`. Returns a
/// non-blocking socket. Throws RemoteError naming `address` when the deadline
/// passes, Aborted when `*abortFlag` becomes true.
Socket connectWithRetry(const SocketAddress& address, Deadline deadline,
                        const std::atomic<bool>* abortFlag);

/// gethostname(), or "" when it fails.
std::string localHostName();

void setNonBlocking(int fd);
void setNoDelay(int fd);
/// Requests `bytes` of kernel send and receive buffer (best effort).
void setBufferSizes(int fd, int bytes);

/// Waits until `fd` is ready for `events` (POLLIN/POLLOUT). Polls in slices of
/// at most 100 ms so the abort flag is noticed. Returns the revents seen.
/// Throws RemoteError("timed out ... <peer>") at the deadline, Aborted on abort.
short waitReady(int fd, short events, Deadline deadline, const std::atomic<bool>* abortFlag,
                std::string_view peer);

/// Writes all `size` bytes to a socket (blocking or not). `peer` names the
/// other end in errors: RemoteError for timeouts and closed connections.
void sendAll(int fd, const void* data, size_t size, Deadline deadline,
             const std::atomic<bool>* abortFlag, std::string_view peer);
/// Reads exactly `size` bytes; EOF before that is RemoteError naming `peer`.
void recvAll(int fd, void* data, size_t size, Deadline deadline, const std::atomic<bool>* abortFlag,
             std::string_view peer);

}  // namespace loom
