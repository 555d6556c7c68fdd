#include "collectives/walker/walk_proxy.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>

#include "core/error.h"

namespace loom::walk {
namespace {

uint64_t loadAcquire(const char* at) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<char*>(at)))
      .load(std::memory_order_acquire);
}

void storeRelease(char* at, uint64_t value) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(at))
      .store(value, std::memory_order_release);
}

}  // namespace

std::vector<std::vector<uint8_t>> proxiedPairs(std::span<const int> hostOf,
                                               std::span<const uint64_t> reaches) {
  const size_t n = hostOf.size();
  if (n > 64 || reaches.size() != n) {
    raise(ErrorCode::InvalidArgument,
          "proxied pairs take a host and a 64-bit reach mask per rank, at most 64 ranks "
          "(got {} hosts, {} masks)",
          n, reaches.size());
  }
  auto canWrite = [&](size_t from, size_t to) { return ((reaches[from] >> to) & 1) != 0; };
  std::vector<std::vector<uint8_t>> proxied(n, std::vector<uint8_t>(n, 0));
  for (size_t r = 0; r < n; ++r) {
    for (size_t p = 0; p < n; ++p) {
      const bool direct = hostOf[r] == hostOf[p] && canWrite(r, p) && canWrite(p, r);
      proxied[r][p] = (p != r && !direct) ? 1 : 0;
    }
  }
  return proxied;
}

ProxyMessages proxyMessages(std::span<const WalkPart> parts, const WalkLaunch& launch,
                            const FifoGeometry& geometry, std::span<const uint8_t> proxied) {
  if (geometry.channels != 1 || proxied.size() != static_cast<size_t>(launch.nranks)) {
    raise(ErrorCode::InvalidArgument,
          "a proxied walk runs on one channel with a flag per rank (got {} channels, {} flags)",
          geometry.channels, proxied.size());
  }
  const size_t es = dataTypeSize(launch.type);
  const std::vector<ChannelStep> steps = channelWalk(parts, launch.type, geometry, 0);
  ProxyMessages out;
  out.toPeer.resize(proxied.size());
  out.fromPeer.resize(proxied.size());
  // The walker's loop (PlanWalker::run): call by call, and within a call
  // slice i of every step before slice i + 1.
  for (size_t begin = 0; begin < steps.size();) {
    size_t end = begin + 1;
    while (end < steps.size() && steps[end].call == steps[begin].call) ++end;
    uint64_t iterations = 0;
    const uint32_t codecBlock = parts[steps[begin].call].codec.block;
    auto sliceOf = [&](const ChannelStep& cs) -> uint64_t {
      return sliceElementsOf(cs, geometry, launch.type, codecBlock);
    };
    for (size_t j = begin; j < end; ++j) {
      const uint64_t slice = sliceOf(steps[j]);
      iterations = std::max<uint64_t>(iterations, (steps[j].step.count + slice - 1) / slice);
    }
    for (uint64_t it = 0; it < iterations; ++it) {
      for (size_t j = begin; j < end; ++j) {
        const Step& s = steps[j].step;
        const uint64_t slice = sliceOf(steps[j]);
        const uint64_t first = it * slice;
        if (first >= s.count) continue;
        const uint64_t n = std::min<uint64_t>(slice, s.count - first);
        const auto bytes =
            static_cast<uint32_t>(steps[j].codec ? codecMessageBytes(n, codecBlock) : n * es);
        if (stepSends(s.kind) && proxied[static_cast<size_t>(s.sendPeer)] != 0) {
          out.toPeer[static_cast<size_t>(s.sendPeer)].push_back(bytes);
        }
        if (stepReceives(s.kind) && proxied[static_cast<size_t>(s.recvPeer)] != 0) {
          out.fromPeer[static_cast<size_t>(s.recvPeer)].push_back(bytes);
        }
      }
    }
    begin = end;
  }
  return out;
}

ProxyMessages proxyMessages(const RankPlan& plan, const WalkCall& call,
                            const FifoGeometry& geometry, std::span<const uint8_t> proxied) {
  const WalkPart part = call.partFor(plan);
  return proxyMessages({&part, 1}, call, geometry, proxied);
}

WalkProxy::WalkProxy(const ArenaLayout& layout, std::span<Link* const> links, char* outbox,
                     char* inbox)
    : layout_(layout), routes_(links.size()), outbox_(outbox), inbox_(inbox) {
  if (layout.geometry().channels != 1) {
    raise(ErrorCode::InvalidArgument, "the walk proxy serves one channel, not {}",
          layout.geometry().channels);
  }
  for (size_t p = 0; p < links.size(); ++p) routes_[p].link = links[p];
}

void WalkProxy::add(const ProxyMessages& messages) {
  for (size_t p = 0; p < routes_.size() && p < messages.toPeer.size(); ++p) {
    if ((!messages.toPeer[p].empty() || !messages.fromPeer[p].empty()) &&
        routes_[p].link == nullptr) {
      raise(ErrorCode::InternalError, "the walk proxy has no link to rank {}", p);
    }
    routes_[p].toPeer.insert(routes_[p].toPeer.end(), messages.toPeer[p].begin(),
                             messages.toPeer[p].end());
    routes_[p].fromPeer.insert(routes_[p].fromPeer.end(), messages.fromPeer[p].begin(),
                               messages.fromPeer[p].end());
  }
}

bool WalkProxy::ship(int peer, Route& route) {
  bool moved = false;
  const uint32_t slots = layout_.geometry().slotCount;
  char* block = outbox_ + layout_.block(0, peer);
  while (!route.toPeer.empty()) {
    const uint64_t message = route.shipped + 1;
    const uint64_t slot = (message - 1) % slots;
    if (loadAcquire(block + ArenaLayout::kReady + 8 * slot) != message) break;
    const uint32_t bytes = route.toPeer.front();
    void* out = route.link->trySendSlot(bytes);
    if (out == nullptr) break;
    std::memcpy(out, block + layout_.slots() + slot * layout_.geometry().bulkSlotBytes, bytes);
    route.link->commitSend(bytes);
    storeRelease(block + layout_.consumed(), message);  // the walker may refill the slot
    route.shipped = message;
    route.toPeer.pop_front();
    moved = true;
  }
  return moved;
}

bool WalkProxy::deliver(int peer, Route& route) {
  bool moved = false;
  const uint32_t slots = layout_.geometry().slotCount;
  char* block = inbox_ + layout_.block(0, peer);
  while (!route.fromPeer.empty()) {
    const uint64_t message = route.delivered + 1;
    const uint64_t slot = (message - 1) % slots;
    // The walker must be done with the slot's previous message.
    if (loadAcquire(block + layout_.consumed()) + slots < message) break;
    const uint32_t bytes = route.fromPeer.front();
    const void* in = route.link->tryRecv(bytes);
    if (in == nullptr) break;
    std::memcpy(block + layout_.slots() + slot * layout_.geometry().bulkSlotBytes, in, bytes);
    route.link->releaseRecv();
    storeRelease(block + ArenaLayout::kReady + 8 * slot, message);
    route.delivered = message;
    route.fromPeer.pop_front();
    moved = true;
  }
  return moved;
}

bool WalkProxy::progress() {
  bool moved = false;
  for (size_t p = 0; p < routes_.size(); ++p) {
    Route& route = routes_[p];
    if (route.link == nullptr) continue;
    moved |= route.link->progress();
    moved |= ship(static_cast<int>(p), route);
    moved |= deliver(static_cast<int>(p), route);
  }
  return moved;
}

bool WalkProxy::idle() const {
  for (const Route& route : routes_) {
    if (!route.toPeer.empty() || !route.fromPeer.empty()) return false;
    if (route.link != nullptr && !route.link->sendsDrained()) return false;
  }
  return true;
}

std::string WalkProxy::describeWait() const {
  std::string out;
  for (size_t p = 0; p < routes_.size(); ++p) {
    const Route& route = routes_[p];
    if (route.toPeer.empty() && route.fromPeer.empty()) continue;
    if (!out.empty()) out += "; ";
    out += fmt::format(
        "rank {}: {} messages to ship (walker's message {} not yet published or "
        "link full), {} to deliver",
        p, route.toPeer.size(), route.shipped + 1, route.fromPeer.size());
  }
  return out.empty() ? "links to drain" : out;
}

}  // namespace loom::walk
