// One opened RDMA device port: the verbs context, a protection domain, the
// port's addressing (LID, GID) and the memory registry of that domain. Links
// share it, and each link keeps it alive, so the domain outlives every queue
// pair and registration made in it.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "transports/ibverbs/ibv_memory.h"
#include "transports/ibverbs/ibv_qp_setup.h"
#include "transports/ibverbs/ibv_transport.h"

namespace loom {

class IbvContext {
 public:
  /// Opens the device and port the config names (chooseIbvPort). Throws
  /// InvalidUsage "no RDMA device" when this host has none.
  static std::shared_ptr<IbvContext> open(const IbvConfig& config);
  ~IbvContext();
  IbvContext(const IbvContext&) = delete;
  IbvContext& operator=(const IbvContext&) = delete;

  ibv_context* verbs() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  IbvMemoryRegistry& memory() { return *memory_; }
  const IbvLocalPort& localPort() const { return local_; }
  uint16_t lid() const { return lid_; }
  const std::array<uint8_t, 16>& gid() const { return gid_; }
  /// Largest single RDMA write the port accepts.
  size_t maxMessageBytes() const { return maxMessageBytes_; }
  /// Largest work-queue and completion-queue depths the device supports.
  int maxQueueDepth() const { return maxQpWr_; }
  int maxCqEntries() const { return maxCqe_; }
  /// "mlx5_0 port 1" for messages.
  std::string where() const;

 private:
  IbvContext() = default;
  void choosePortAddress(const IbvConfig& config, const ibv_port_attr& port);

  std::string name_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  // Declared after pd_ and destroyed explicitly first: registrations live in the domain.
  std::unique_ptr<IbvMemoryRegistry> memory_;
  IbvLocalPort local_;
  uint16_t lid_ = 0;
  std::array<uint8_t, 16> gid_{};
  size_t maxMessageBytes_ = 0;
  int maxQpWr_ = 0;
  int maxCqe_ = 0;
};

}  // namespace loom
