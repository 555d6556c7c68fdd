#include "core/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

namespace loom {
namespace {

// Abort flags are checked at least this often by every wait.
constexpr std::chrono::milliseconds kAbortCheck{100};

bool aborted(const std::atomic<bool>* abortFlag) {
  return abortFlag != nullptr && abortFlag->load(std::memory_order_acquire);
}

std::string numericHost(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw =
      sa->sa_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  if (inet_ntop(sa->sa_family, raw, text, sizeof(text)) == nullptr) raiseErrno("inet_ntop");
  return text;
}

// The address the kernel would use to reach `destination`: connecting a UDP
// socket sends nothing but fixes the source address.
std::string routeSource(const std::string& destination) {
  SocketAddress to;
  try {
    to = SocketAddress::fromHost(destination, 9);
  } catch (const Error&) {
    return {};
  }
  Socket probe(::socket(to.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return {};
  if (::connect(probe.fd(), reinterpret_cast<const sockaddr*>(&to.storage), to.length) != 0) {
    return {};
  }
  return SocketAddress::local(probe.fd()).host();
}

struct Interface {
  std::string name;
  std::string host;
  bool loopback = false;
  bool ipv4 = false;
};

std::vector<Interface> upInterfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) raiseErrno("getifaddrs");
  std::vector<Interface> result;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || (it->ifa_flags & IFF_UP) == 0) continue;
    const int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    // Link-local IPv6 addresses need a scope id to be usable; skip them.
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(it->ifa_addr)->sin6_addr)) {
      continue;
    }
    result.push_back({it->ifa_name, numericHost(it->ifa_addr), (it->ifa_flags & IFF_LOOPBACK) != 0,
                      family == AF_INET});
  }
  freeifaddrs(list);
  // IPv4 first: it is what most clusters route.
  std::stable_sort(result.begin(), result.end(),
                   [](const Interface& a, const Interface& b) { return a.ipv4 && !b.ipv4; });
  return result;
}

}  // namespace

void Socket::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

SocketAddress SocketAddress::fromHost(const std::string& host, uint16_t port) {
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    address.length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    address.length = sizeof(sockaddr_in6);
  } else {
    raise(ErrorCode::InvalidArgument, "'{}' is not a numeric IPv4 or IPv6 address", host);
  }
  return address;
}

SocketAddress SocketAddress::parse(const std::string& hostPort) {
  std::string host;
  std::string port;
  if (!hostPort.empty() && hostPort.front() == '[') {
    const size_t close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':') {
      raise(ErrorCode::InvalidArgument, "address '{}' is not of the form [v6]:port", hostPort);
    }
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    const size_t colon = hostPort.rfind(':');
    if (colon == std::string::npos || hostPort.find(':') != colon) {
      raise(ErrorCode::InvalidArgument, "address '{}' is not of the form host:port or [v6]:port",
            hostPort);
    }
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port) > 65535) {
    raise(ErrorCode::InvalidArgument, "address '{}' has no valid port (0-65535)", hostPort);
  }
  return fromHost(host, static_cast<uint16_t>(std::stoi(port)));
}

SocketAddress SocketAddress::local(int fd) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    raiseErrno("getsockname");
  }
  return address;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

std::string SocketAddress::host() const {
  if (family() != AF_INET && family() != AF_INET6) return {};
  return numericHost(reinterpret_cast<const sockaddr*>(&storage));
}

std::string SocketAddress::toString() const { return formatHostPort(host(), port()); }

std::string formatHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string chooseLocalHost(const std::string& routeTo) {
  const auto interfaces = upInterfaces();
  if (const auto wanted = envString("LOOM_SOCKET_IFNAME")) {
    for (const auto& itf : interfaces) {
      if (itf.name == *wanted) {
        LOOM_INFO("using interface {} ({}) from LOOM_SOCKET_IFNAME", itf.name, itf.host);
        return itf.host;
      }
    }
    std::string known;
    for (const auto& itf : interfaces) known += (known.empty() ? "" : ", ") + itf.name;
    raise(ErrorCode::InvalidArgument,
          "LOOM_SOCKET_IFNAME='{}' names no up interface with an address (have: {})", *wanted,
          known);
  }
  // An empty destination asks for the default route; a public address that is
  // never contacted (UDP connect only consults the routing table).
  const std::string destination = routeTo.empty() ? "8.8.8.8" : routeTo;
  if (std::string source = routeSource(destination); !source.empty()) {
    LOOM_INFO("using {}, the local address that routes to {}", source, destination);
    return source;
  }
  for (const auto& itf : interfaces) {
    if (!itf.loopback) {
      LOOM_INFO("using interface {} ({}): first up non-loopback interface", itf.name, itf.host);
      return itf.host;
    }
  }
  LOOM_INFO("using 127.0.0.1: no non-loopback interface is up");
  return "127.0.0.1";
}

Socket listenTcp(const std::string& host, uint16_t port, int backlog) {
  const SocketAddress address = SocketAddress::fromHost(host, port);
  Socket sock(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock.valid()) raiseErrno("socket");
  const int one = 1;
  setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(sock.fd(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    raiseErrno(fmt::format("bind to {}", address.toString()));
  }
  if (::listen(sock.fd(), backlog) != 0)
    raiseErrno(fmt::format("listen on {}", address.toString()));
  return sock;
}

std::string localHostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return {};
  return host;
}

void setNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) raiseErrno("fcntl(O_NONBLOCK)");
}

void setNoDelay(int fd) {
  const int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    raiseErrno("setsockopt(TCP_NODELAY)");
  }
}

void setBufferSizes(int fd, int bytes) {
  // Best effort: the kernel clamps to net.core.{w,r}mem_max.
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

short waitReady(int fd, short events, Deadline deadline, const std::atomic<bool>* abortFlag,
                std::string_view peer) {
  for (;;) {
    if (aborted(abortFlag)) raise(ErrorCode::Aborted, "aborted while waiting for {}", peer);
    if (deadline.expired()) raise(ErrorCode::RemoteError, "timed out waiting for {}", peer);
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(deadline.remaining(kAbortCheck).count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      raiseErrno(fmt::format("poll on connection to {}", peer));
    }
    if (n > 0) return p.revents;
  }
}

Socket connectWithRetry(const SocketAddress& address, Deadline deadline,
                        const std::atomic<bool>* abortFlag) {
  const std::string name = address.toString();
  auto backoff = std::chrono::milliseconds(10);
  int lastError = 0;
  for (;;) {
    if (aborted(abortFlag)) raise(ErrorCode::Aborted, "aborted while connecting to {}", name);
    if (deadline.expired()) {
      raise(ErrorCode::RemoteError, "could not connect to {} before the deadline: {}", name,
            lastError != 0 ? std::strerror(lastError) : "timed out");
    }
    Socket sock(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!sock.valid()) raiseErrno("socket");
    int rc =
        ::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&address.storage), address.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      // Wait for the connect to finish, still honouring deadline and abort.
      pollfd p{sock.fd(), POLLOUT, 0};
      err = ETIMEDOUT;
      while (!deadline.expired() && !aborted(abortFlag)) {
        const int n = ::poll(&p, 1, static_cast<int>(deadline.remaining(kAbortCheck).count()));
        if (n < 0 && errno != EINTR) raiseErrno("poll(connect)");
        if (n > 0) {
          socklen_t len = sizeof(err);
          if (getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
          break;
        }
      }
    }
    if (err == 0) return sock;
    lastError = err;
    // Refused/unreachable: the server may simply not listen yet. Others are final.
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != ENETUNREACH && err != EHOSTUNREACH &&
        err != ECONNRESET && err != EAGAIN && err != EINTR && err != ECONNABORTED) {
      raise(ErrorCode::RemoteError, "connect to {} failed: {} (errno {})", name, std::strerror(err),
            err);
    }
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining(kAbortCheck)));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

void sendAll(int fd, const void* data, size_t size, Deadline deadline,
             const std::atomic<bool>* abortFlag, std::string_view peer) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::send(fd, bytes + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      waitReady(fd, POLLOUT, deadline, abortFlag, peer);
      continue;
    }
    raise(ErrorCode::RemoteError, "connection to {} failed while sending: {}", peer,
          n < 0 ? std::strerror(errno) : "closed");
  }
}

void recvAll(int fd, void* data, size_t size, Deadline deadline, const std::atomic<bool>* abortFlag,
             std::string_view peer) {
  auto* bytes = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(fd, bytes + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) raise(ErrorCode::RemoteError, "connection to {} closed by the peer", peer);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      waitReady(fd, POLLIN, deadline, abortFlag, peer);
      continue;
    }
    raise(ErrorCode::RemoteError, "connection to {} failed while receiving: {}", peer,
          std::strerror(errno));
  }
}

}  // namespace loom
