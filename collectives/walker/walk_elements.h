// The element loops of a walk: this thread's share of a copy or a reduction,
// the team striding through the elements together. Every protocol and the
// walker's local copies move their elements through these loops, so the
// vector width and the loads kept in flight are tuned in one place.
//
// Element type E: device/element_types.cuh (Storage, Compute, widen, narrow).
#pragma once

#include <cstdint>

#include "collectives/walker/walk_types.h"
#include "math/half.h"  // LOOM_HD
#include "math/reduce_ops.h"

namespace loom::walk {

// ReduceOp values (core/types.h), repeated as constants as the step kinds are
// (plan_walker.h): this file is compiled as device code.
inline constexpr uint8_t kOpSum = 0, kOpProd = 1, kOpMax = 2, kOpMin = 3, kOpAvg = 4;

/// x (op) y for one element in the compute type. At namespace scope so that a
/// protocol reducing element by element (walk_low_latency.h) computes exactly
/// what the loops do.
template <typename E, typename Op>
struct CombineOp {
  using S = typename E::Storage;
  int nranks;
  bool finalize;  // avg's division, on the step that completes the sum
  LOOM_HD S operator()(S x, S y) const {
    const S r = E::narrow(Op::template apply<typename E::Compute>(E::widen(x), E::widen(y)));
    return finalize ? E::narrow(kernels::divideByRanks(E::widen(r), nranks)) : r;
  }
};

/// The element loops of one team thread. Cheap to make: references to the
/// team and to the walk's arguments (the rank count that avg divides by).
template <typename Team, typename E>
class ElementLoops {
 public:
  using S = typename E::Storage;

  LOOM_HD ElementLoops(Team& team, const WalkArgs& args) : team_(team), args_(args) {}

  LOOM_HD void copy(S* dst, const S* src, uint64_t n) { map(dst, src, nullptr, n, TakeFirst{}); }

  /// dst = a (op) b, then the op's final transform when `finalize`. The op is
  /// the same for the whole call, so the switch is taken once per slice.
  LOOM_HD void reduce(S* dst, const S* a, const S* b, uint64_t n, uint8_t op, bool finalize) {
    const bool avg = op == kOpAvg;
    switch (op) {
      case kOpProd:
        return reduceWith<kernels::ProdOp>(dst, a, b, n, false);
      case kOpMax:
        return reduceWith<kernels::MaxOp>(dst, a, b, n, false);
      case kOpMin:
        return reduceWith<kernels::MinOp>(dst, a, b, n, false);
      default:
        return reduceWith<kernels::SumOp>(dst, a, b, n, avg && finalize);
    }
  }

 private:
  static constexpr uint32_t kPackElements = 16 / sizeof(S);
  /// 16 bytes of elements: one vector load or store per thread on the GPU.
  struct alignas(16) Pack {
    S v[kPackElements];
  };

  LOOM_HD static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

  /// dst[i] = f(a[i], b[i]) over this thread's share: whole 16-byte packs when
  /// every pointer allows (slots always do; user buffers when their offsets
  /// do), then the rest one element at a time. b may be null (f ignores it).
  /// Packs each thread loads before it uses any: one block per channel has
  /// only its own loads in flight, so on an H200 a thread that waited for each
  /// 16-byte load in turn moved about 4 GB/s per channel.
  static constexpr uint32_t kUnroll = 4;

  template <typename F>
  LOOM_HD void map(S* dst, const S* a, const S* b, uint64_t n, F f) {
    const bool packed = aligned16(dst) && aligned16(a) && (b == nullptr || aligned16(b));
    const uint64_t packs = packed ? n / kPackElements : 0;
    const auto* as = reinterpret_cast<const Pack*>(a);
    const auto* bs = reinterpret_cast<const Pack*>(b);
    auto* ds = reinterpret_cast<Pack*>(dst);
    const uint64_t stride = static_cast<uint64_t>(team_.size());
    uint64_t p = static_cast<uint64_t>(team_.index());
    // Whole rounds of kUnroll packs per thread: all loads, then all stores
    // (a pack is read and written at one index only, so in place is safe).
    for (; p + (kUnroll - 1) * stride < packs; p += kUnroll * stride) {
      Pack x[kUnroll];
      Pack y[kUnroll];
      for (uint32_t u = 0; u < kUnroll; ++u) x[u] = as[p + u * stride];
      for (uint32_t u = 0; u < kUnroll; ++u) y[u] = bs != nullptr ? bs[p + u * stride] : x[u];
      for (uint32_t u = 0; u < kUnroll; ++u) {
        Pack r;
        for (uint32_t k = 0; k < kPackElements; ++k) r.v[k] = f(x[u].v[k], y[u].v[k]);
        ds[p + u * stride] = r;
      }
    }
    for (; p < packs; p += stride) {
      const Pack x = as[p];
      const Pack y = bs != nullptr ? bs[p] : x;
      Pack r;
      for (uint32_t k = 0; k < kPackElements; ++k) r.v[k] = f(x.v[k], y.v[k]);
      ds[p] = r;
    }
    for (uint64_t i = packs * kPackElements + team_.index(); i < n; i += team_.size()) {
      dst[i] = f(a[i], b != nullptr ? b[i] : a[i]);
    }
  }

  struct TakeFirst {
    LOOM_HD S operator()(S x, S /*unused*/) const { return x; }
  };

  template <typename Op>
  LOOM_HD void reduceWith(S* dst, const S* a, const S* b, uint64_t n, bool finalize) {
    map(dst, a, b, n, CombineOp<E, Op>{args_.nranks, finalize});
  }

  Team& team_;
  const WalkArgs& args_;
};

}  // namespace loom::walk
