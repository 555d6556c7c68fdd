// Low-latency messages (Protocol::LowLatency, walk_types.h): every 4 payload
// bytes travel with the message's 4-byte flag in one 8-byte line, so a reader
// that sees the flag has the data too. One trip through memory where bulk
// takes two, at half the bandwidth: the protocol of small messages, where the
// trip is the cost. Each thread polls the lines of its own units, so no team
// barrier stands between a line's arrival and its use; only the wait for room
// is thread 0's, as in bulk.
#pragma once

#include <cstdint>

#include "collectives/walker/walk_elements.h"
#include "collectives/walker/walk_types.h"
#include "math/half.h"  // LOOM_HD
#include "math/reduce_ops.h"

namespace loom::walk {

template <typename Team, typename E>
class PlanWalker;  // plan_walker.h, which includes this file

/// One slice of a step by low-latency messages; made by the walker per slice.
template <typename Team, typename E>
class LowLatencyProtocol {
 public:
  using Walker = PlanWalker<Team, E>;
  using S = typename E::Storage;
  using Ends = typename Walker::Ends;
  using Traffic = typename Walker::Traffic;
  static constexpr uint32_t kElementsPerUnit = kLlUnitBytes / sizeof(S);

  LOOM_HD explicit LowLatencyProtocol(Walker& walker)
      : walker_(walker), team_(walker.team_), args_(walker.args_) {}

  LOOM_HD bool slice(const WalkStep& s, const Ends& e, uint64_t n) {
    const Traffic t = walker_.trafficOf(s, e);
    bool ok = true;
    if (t.out && team_.index() == 0) {
      ok = walker_.waitFor(t.out->consumed, walker_.roomFor(t.outMessage), t.out->peer, 2);
    }
    if (team_.syncOr(!ok)) return false;

    const uint64_t* inLines = t.in ? t.in->lines + t.inSlot * args_.llSlotLines : nullptr;
    uint64_t* outLines = t.out ? t.out->lines + t.outSlot * args_.llSlotLines : nullptr;
    const uint32_t inFlag = llFlag(t.inMessage);
    const uint32_t outFlag = llFlag(t.outMessage);
    const uint64_t units = (n + kElementsPerUnit - 1) / kElementsPerUnit;
    for (uint64_t u = team_.index(); ok && u < units; u += team_.size()) {
      const uint64_t base = u * kElementsPerUnit;
      const uint32_t valid =
          n - base < kElementsPerUnit ? static_cast<uint32_t>(n - base) : kElementsPerUnit;
      Unit local{0};
      if (e.reduces || !t.in) {  // a plain receive's src names nothing to read
        for (uint32_t k = 0; k < valid; ++k) local.v[k] = e.src[base + k];
      }
      Unit result = local;
      if (t.in) {
        Unit got{0};
        ok = readUnit(inLines + 2 * u, inFlag, t.in->peer, got.raw);
        if (!ok) break;
        if (e.reduces) {
          reduceUnit(result, local, got, valid, s.finalize != 0);
        } else {
          result = got;
        }
      }
      if (e.dst) {
        for (uint32_t k = 0; k < valid; ++k) e.dst[base + k] = result.v[k];
      }
      if (outLines) writeUnit(outLines + 2 * u, outFlag, result.raw);
    }
    if (team_.syncOr(!ok)) return false;
    if (team_.index() == 0) walker_.finishTraffic(s, t);
    return true;
  }

 private:
  /// The payload of two lines, as elements.
  union Unit {
    uint64_t raw;
    S v[kElementsPerUnit];
  };

  /// The flag rides in a line's upper half, the payload in the lower.
  struct LineCarries {
    uint32_t flag;
    LOOM_HD bool operator()(uint64_t v) const { return static_cast<uint32_t>(v >> 32) == flag; }
  };

  template <typename Op>
  using Combine = CombineOp<E, Op>;

  LOOM_HD bool readUnit(const uint64_t* line, uint32_t flag, int32_t peer, uint64_t& payload) {
    uint64_t low = 0;
    uint64_t high = 0;
    if (!walker_.waitFor(line, LineCarries{flag}, peer, 1, false)) return false;
    if (!walker_.waitFor(line + 1, LineCarries{flag}, peer, 1, false)) return false;
    // The waits returned on loads that carried the flag; load again for the
    // data (the same values: a line is written once per message).
    low = team_.loadRelaxed(line) & 0xFFFFFFFFull;
    high = team_.loadRelaxed(line + 1) & 0xFFFFFFFFull;
    payload = low | (high << 32);
    return true;
  }

  LOOM_HD void writeUnit(uint64_t* line, uint32_t flag, uint64_t payload) {
    const uint64_t tag = static_cast<uint64_t>(flag) << 32;
    team_.storeRelaxed(line, tag | (payload & 0xFFFFFFFFull));
    team_.storeRelaxed(line + 1, tag | (payload >> 32));
  }

  /// The op on this thread's own unit, element by element: the team-wide
  /// loops (walk_elements.h) would hand its elements to threads that have not
  /// read them.
  LOOM_HD void reduceUnit(Unit& result, const Unit& a, const Unit& b, uint32_t valid,
                          bool finalize) {
    const bool avg = finalize && walker_.call_->op == kOpAvg;
    for (uint32_t k = 0; k < valid; ++k) {
      switch (walker_.call_->op) {
        case kOpProd:
          result.v[k] = Combine<kernels::ProdOp>{args_.nranks, false}(a.v[k], b.v[k]);
          break;
        case kOpMax:
          result.v[k] = Combine<kernels::MaxOp>{args_.nranks, false}(a.v[k], b.v[k]);
          break;
        case kOpMin:
          result.v[k] = Combine<kernels::MinOp>{args_.nranks, false}(a.v[k], b.v[k]);
          break;
        default:
          result.v[k] = Combine<kernels::SumOp>{args_.nranks, avg}(a.v[k], b.v[k]);
          break;
      }
    }
  }

  Walker& walker_;
  Team& team_;
  const WalkArgs& args_;
};

}  // namespace loom::walk
