// The walker's proxy to peers on other hosts. A walker (plan_walker.h) cannot
// open a socket, least of all from a GPU, so a host thread stands in: the
// walker writes its messages for a remote peer into this rank's outbox arena
// and reads the peer's messages from its inbox arena (walk_program.h,
// FifoRoutes), exactly as it would use a neighbour's arena; the proxy ships
// each published outbox slot over the peer's Link, frees the slot, and lands
// each arriving message in an inbox slot the walker has finished with. On a
// GPU the boxes are pinned host memory, which the kernel reaches over PCIe.
//
// The same proxy is the fallback between ranks of one host whose kernels cannot
// write into each other's device memory (no peer access between their GPUs,
// or a CUDA IPC mapping refused, as in containers without a shared IPC
// namespace): their messages are staged through the pinned boxes and the
// ranks' shared-memory link instead.
//
// One channel per walk when proxies are used: a link carries one FIFO, so the
// order of messages on it is the walker's order on that connection.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "collectives/plan.h"
#include "collectives/walker/walk_program.h"
#include "transports/link.h"

namespace loom::walk {

/// Which pairs of ranks talk through their proxies: `proxied[r][p]` is 1 when
/// rank r reaches rank p through its boxes. `hostOf[r]` numbers rank r's host;
/// bit p of `reaches[r]` says that rank r can write into rank p's FIFO memory
/// (same device, peer access, an IPC mapping). A pair talks directly only on
/// one host and when both can write to each other, so both ends of every
/// connection agree. Throws InvalidArgument for more than 64 ranks or
/// mismatched sizes.
std::vector<std::vector<uint8_t>> proxiedPairs(std::span<const int> hostOf,
                                               std::span<const uint64_t> reaches);

/// The byte counts of a walk's messages to and from each proxied peer, in
/// walk order (indexed by rank; empty for ranks that are not proxied).
struct ProxyMessages {
  std::vector<std::vector<uint32_t>> toPeer;
  std::vector<std::vector<uint32_t>> fromPeer;
};

/// What `launch.rank`'s walk of `parts` sends to and receives from each
/// proxied peer: the walker's order (call by call, slice-outer within a
/// call), computed on the host.
ProxyMessages proxyMessages(std::span<const WalkPart> parts, const WalkLaunch& launch,
                            const FifoGeometry& geometry, std::span<const uint8_t> proxied);
/// The same for one call.
ProxyMessages proxyMessages(const RankPlan& plan, const WalkCall& call,
                            const FifoGeometry& geometry, std::span<const uint8_t> proxied);

class WalkProxy {
 public:
  /// `links[p]`: the link to rank p (only proxied peers' are used); the boxes
  /// are this rank's outbox and inbox arenas, laid out by `layout` with one
  /// channel. The proxy keeps its own message counters across walks.
  WalkProxy(const ArenaLayout& layout, std::span<Link* const> links, char* outbox, char* inbox);

  /// Queues one walk's messages (after its program was built, before or
  /// while the walker runs).
  void add(const ProxyMessages& messages);
  /// Moves what can move now; true if anything did. Throws RemoteError when a
  /// link fails (the peer is gone) or a message has another size than the plan's.
  bool progress();
  /// Nothing queued, and every link has sent what it was given.
  bool idle() const;
  /// For a wait's message: which peer the proxy waits on, and for what.
  std::string describeWait() const;

 private:
  struct Route {
    Link* link = nullptr;
    uint64_t shipped = 0;    // messages taken from the outbox
    uint64_t delivered = 0;  // messages placed in the inbox
    std::deque<uint32_t> toPeer, fromPeer;
  };
  bool ship(int peer, Route& route);
  bool deliver(int peer, Route& route);

  ArenaLayout layout_;
  std::vector<Route> routes_;
  char* outbox_;
  char* inbox_;
};

}  // namespace loom::walk
