#include "core/log.h"
#include "core/socket.h"
#include "transports/tcp/tcp_transport.h"

namespace loom {

TcpListener::TcpListener(const std::string& host) {
  const std::string bindHost = host.empty() ? chooseLocalHost() : host;
  Socket sock = listenTcp(bindHost, 0);
  address_ = SocketAddress::local(sock.fd()).toString();
  fd_ = sock.release();
  LOOM_INFO("tcp transport listening on {}", address_);
}

TcpListener::~TcpListener() { Socket(fd_).reset(); }

std::string TcpListener::address() const { return address_; }

}  // namespace loom
