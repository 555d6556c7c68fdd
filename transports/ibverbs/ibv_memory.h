// Bookkeeping of memory registrations, independent of verbs: which address
// ranges are registered, who uses them, when to drop them. The registration
// itself is a callback (ibv_reg_mr/ibv_dereg_mr in IbvContext).
//
// Rules:
// - Ranges are widened to whole pages (the NIC pins pages anyway), so two
//   buffers on one page share a registration.
// - A request inside a live registration reuses it (reference count + 1).
// - A request that overlaps or touches live registrations registers their
//   union once; the old ones are retired: dropped at once if unused, else when
//   their last user releases them. Live registrations therefore never overlap
//   or touch, and a lookup finds at most one.
// - Unused registrations stay cached for reuse until their total size exceeds
//   maxUnusedBytes; then the least recently used go first.
// - invalidate() retires whatever overlaps memory about to be freed: a cached
//   registration of freed memory would pin the old pages and hand out keys
//   for memory that is no longer the caller's buffer.
//
// Not thread-safe: one registry belongs to one device context, used from the
// thread that drives its links.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>

namespace loom {

struct IbvRegion {
  uintptr_t begin = 0;
  size_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;  ///< the callback's own (an ibv_mr*)
};

class IbvMemoryRegistry {
 public:
  /// Registers [begin, begin + length) and returns keys and handle; throws on failure.
  using RegisterFn = std::function<IbvRegion(uintptr_t begin, size_t length)>;
  /// Must not throw: it runs from destructors.
  using DeregisterFn = std::function<void(const IbvRegion&)>;

  struct Options {
    size_t pageBytes = 4096;                  ///< a power of two
    size_t maxUnusedBytes = size_t{1} << 28;  ///< cached registrations nobody uses
  };

  /// A reference to a registration covering the requested range.
  struct Ref {
    uint64_t id = 0;
    IbvRegion region;
  };

  IbvMemoryRegistry(RegisterFn registerFn, DeregisterFn deregisterFn, Options options);
  ~IbvMemoryRegistry();  ///< deregisters everything still registered
  IbvMemoryRegistry(const IbvMemoryRegistry&) = delete;
  IbvMemoryRegistry& operator=(const IbvMemoryRegistry&) = delete;

  /// The live registration covering [addr, addr + bytes), or nullopt when the
  /// range needs registering. Takes no reference.
  std::optional<IbvRegion> find(const void* addr, size_t bytes) const;
  /// A reference to a registration covering the range, registering as the
  /// rules above say. Throws InvalidArgument for an empty or wrapping range.
  Ref acquire(const void* addr, size_t bytes);
  /// Drops a reference taken by acquire.
  void release(uint64_t id);
  /// The memory [addr, addr + bytes) is about to be freed.
  void invalidate(const void* addr, size_t bytes);

  size_t registrations() const { return entries_.size(); }  ///< live + retired
  size_t unusedBytes() const { return unusedBytes_; }

 private:
  struct Entry {
    IbvRegion region;
    uint64_t refs = 0;
    bool retired = false;
    uint64_t lastUse = 0;
    uintptr_t end() const { return region.begin + region.length; }
  };

  std::pair<uintptr_t, uintptr_t> pages(const void* addr, size_t bytes) const;
  std::optional<uint64_t> liveCovering(uintptr_t begin, uintptr_t end) const;
  void retire(uint64_t id);
  void drop(uint64_t id);
  void evict();

  RegisterFn register_;
  DeregisterFn deregister_;
  Options options_;
  std::map<uint64_t, Entry> entries_;   // by id
  std::map<uintptr_t, uint64_t> live_;  // begin -> id; disjoint, non-touching ranges
  uint64_t nextId_ = 1;
  uint64_t clock_ = 0;
  size_t unusedBytes_ = 0;  // live entries with no references
};

/// Holds one reference for its lifetime.
class IbvMemoryLease {
 public:
  IbvMemoryLease() = default;
  IbvMemoryLease(IbvMemoryRegistry& registry, const void* addr, size_t bytes)
      : registry_(&registry), ref_(registry.acquire(addr, bytes)) {}
  // release() throws only on a broken registry invariant, where terminating is right.
  ~IbvMemoryLease() { reset(); }  // NOLINT(bugprone-exception-escape)
  IbvMemoryLease(IbvMemoryLease&& other) noexcept
      : registry_(std::exchange(other.registry_, nullptr)), ref_(other.ref_) {}
  IbvMemoryLease& operator=(IbvMemoryLease&& other) noexcept {  // NOLINT(bugprone-exception-escape)
    if (this != &other) {
      reset();
      registry_ = std::exchange(other.registry_, nullptr);
      ref_ = other.ref_;
    }
    return *this;
  }
  IbvMemoryLease(const IbvMemoryLease&) = delete;
  IbvMemoryLease& operator=(const IbvMemoryLease&) = delete;

  const IbvRegion& region() const { return ref_.region; }
  void reset() {
    if (registry_ != nullptr) std::exchange(registry_, nullptr)->release(ref_.id);
  }

 private:
  IbvMemoryRegistry* registry_ = nullptr;
  IbvMemoryRegistry::Ref ref_;
};

}  // namespace loom
