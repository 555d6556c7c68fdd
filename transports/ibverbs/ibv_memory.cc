#include "transports/ibverbs/ibv_memory.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace loom {

IbvMemoryRegistry::IbvMemoryRegistry(RegisterFn registerFn, DeregisterFn deregisterFn,
                                     Options options)
    : register_(std::move(registerFn)), deregister_(std::move(deregisterFn)), options_(options) {
  if (options_.pageBytes == 0 || (options_.pageBytes & (options_.pageBytes - 1)) != 0) {
    raise(ErrorCode::InvalidArgument, "ibverbs memory registry: page size {} is not a power of 2",
          options_.pageBytes);
  }
}

IbvMemoryRegistry::~IbvMemoryRegistry() {
  for (const auto& [id, entry] : entries_) {
    if (entry.refs != 0) {
      LOOM_WARN("ibverbs: memory registration [{:#x}, +{}) still has {} users at teardown",
                entry.region.begin, entry.region.length, entry.refs);
    }
    deregister_(entry.region);
  }
}

std::pair<uintptr_t, uintptr_t> IbvMemoryRegistry::pages(const void* addr, size_t bytes) const {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t mask = options_.pageBytes - 1;
  if (bytes == 0 || a > UINTPTR_MAX - bytes || a + bytes > UINTPTR_MAX - mask) {
    raise(ErrorCode::InvalidArgument,
          "ibverbs memory registry: cannot register {} bytes at {} (empty or wraps around)", bytes,
          addr);
  }
  return {a & ~mask, (a + bytes + mask) & ~mask};
}

std::optional<uint64_t> IbvMemoryRegistry::liveCovering(uintptr_t begin, uintptr_t end) const {
  auto it = live_.upper_bound(begin);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (entries_.at(it->second).end() < end) return std::nullopt;
  return it->second;
}

std::optional<IbvRegion> IbvMemoryRegistry::find(const void* addr, size_t bytes) const {
  const auto [begin, end] = pages(addr, bytes);
  const auto id = liveCovering(begin, end);
  if (!id) return std::nullopt;
  return entries_.at(*id).region;
}

IbvMemoryRegistry::Ref IbvMemoryRegistry::acquire(const void* addr, size_t bytes) {
  const auto [begin, end] = pages(addr, bytes);
  if (const auto id = liveCovering(begin, end)) {
    Entry& e = entries_.at(*id);
    if (e.refs++ == 0) unusedBytes_ -= e.region.length;
    e.lastUse = ++clock_;
    return {*id, e.region};
  }
  // Live ranges are disjoint and never touch, so those overlapping or touching
  // [begin, end] are consecutive in address order, starting at most one before.
  std::vector<uint64_t> absorbed;
  uintptr_t lo = begin;
  uintptr_t hi = end;
  auto it = live_.upper_bound(begin);
  if (it != live_.begin() && entries_.at(std::prev(it)->second).end() >= begin) --it;
  for (; it != live_.end() && it->first <= end; ++it) {
    const Entry& e = entries_.at(it->second);
    absorbed.push_back(it->second);
    lo = std::min(lo, e.region.begin);
    hi = std::max(hi, e.end());
  }
  IbvRegion region = register_(lo, hi - lo);  // throws: nothing has changed yet
  region.begin = lo;
  region.length = hi - lo;
  for (uint64_t old : absorbed) retire(old);
  const uint64_t id = nextId_++;
  entries_.emplace(id, Entry{region, 1, false, ++clock_});
  live_.emplace(lo, id);
  evict();
  return {id, region};
}

void IbvMemoryRegistry::release(uint64_t id) {
  const auto it = entries_.find(id);
  if (it == entries_.end() || it->second.refs == 0) {
    raise(ErrorCode::InternalError, "ibverbs memory registry: release of unknown reference {}", id);
  }
  Entry& e = it->second;
  if (--e.refs > 0) return;
  if (e.retired) {
    drop(id);
    return;
  }
  unusedBytes_ += e.region.length;
  e.lastUse = ++clock_;
  evict();
}

void IbvMemoryRegistry::invalidate(const void* addr, size_t bytes) {
  const auto [begin, end] = pages(addr, bytes);
  std::vector<uint64_t> hit;
  for (const auto& [start, id] : live_) {
    if (start < end && entries_.at(id).end() > begin) hit.push_back(id);
  }
  for (uint64_t id : hit) retire(id);
}

void IbvMemoryRegistry::retire(uint64_t id) {
  Entry& e = entries_.at(id);
  live_.erase(e.region.begin);
  e.retired = true;
  if (e.refs == 0) {
    unusedBytes_ -= e.region.length;
    drop(id);
  }
}

void IbvMemoryRegistry::drop(uint64_t id) {
  const auto it = entries_.find(id);
  deregister_(it->second.region);
  entries_.erase(it);
}

void IbvMemoryRegistry::evict() {
  while (unusedBytes_ > options_.maxUnusedBytes) {
    uint64_t oldest = 0;
    uint64_t oldestUse = UINT64_MAX;
    for (const auto& [start, id] : live_) {
      const Entry& e = entries_.at(id);
      if (e.refs == 0 && e.lastUse < oldestUse) {
        oldest = id;
        oldestUse = e.lastUse;
      }
    }
    retire(oldest);  // unusedBytes_ > 0 guarantees one exists
  }
}

}  // namespace loom
