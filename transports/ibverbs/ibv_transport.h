// Native RDMA links over libibverbs: one reliable-connected queue pair per
// peer, messages RDMA-written into the peer's receive ring (see ibv_link.h).
// Built when CMake finds rdma-core (LOOM_HAVE_IBVERBS).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "transports/ibverbs/ibv_qp_setup.h"
#include "transports/link.h"

namespace loom {

struct IbvConfig {
  std::string device;  ///< e.g. "mlx5_0"; empty: the first device with an ACTIVE port
  int port = 0;        ///< 0: the device's first ACTIVE port
  int gidIndex = -1;   ///< -1: RoCE v2 IPv4-mapped if there is one (0 on InfiniBand)
  size_t slotBytes = size_t{512} << 10;  ///< largest message, at most 8 MiB
  int slots = 4;                         ///< messages in flight per direction
  /// Largest RDMA write; a message is cut into writes of at most this. 0: the
  /// port's limit (in practice one write per message). Small values exercise
  /// the multi-write path in tests.
  size_t maxBytesPerWr = 0;
  IbvQpOptions qp;
};

/// An all-gather over the bootstrap: every rank passes its blob, every rank
/// gets all blobs indexed by rank. It owns its deadline.
using IbvExchange = std::function<std::vector<std::string>(const std::string& mine)>;

/// Connects an ibverbs link to every rank in `peers` (links in that order).
/// Every rank of the exchange must call this, with an empty `peers` if it has
/// none; the exchange runs twice (connection records, then "all QPs ready").
/// Throws Error(InvalidUsage) mentioning "no RDMA device" when peers is not
/// empty and this host has no usable RDMA port; the caller should make every
/// rank agree on using ibverbs before calling, since a rank that throws here
/// leaves its peers waiting in the exchange until their deadline.
std::vector<std::unique_ptr<Link>> connectIbvLinks(int myRank, const std::vector<int>& peers,
                                                   uint64_t commTag, const IbvConfig& config,
                                                   const IbvExchange& exchange, Deadline deadline,
                                                   const std::atomic<bool>* abortFlag);

}  // namespace loom
