// A wire codec's messages: bulk messages (walk_bulk.h) whose payload is the
// int8 encoding of fp32 values (wire_codec.h, laid out as the host codec lays
// out an encoding). Encoding inside the walk lets a compressed ring run as one
// walk: each hop decodes what arrived, adds its own values and encodes the sum
// for the next rank in one pass, rounding as the host's compressed ring does.
//
// The walker runs only the codec steps PlanWalker::codecStepValid accepts
// (fp32, a block that fits a slot, Send / RecvReduceSend / RecvReduce).
#pragma once

#include <cstdint>
#include <type_traits>

#include "collectives/walker/walk_bulk.h"
#include "collectives/walker/walk_types.h"
#include "collectives/walker/wire_codec.h"
#include "math/half.h"  // LOOM_HD

namespace loom::walk {

template <typename Team, typename E>
class PlanWalker;  // plan_walker.h, which includes this file

/// One slice of a codec step; made by the walker per slice.
template <typename Team, typename E>
class CodecProtocol {
 public:
  using Walker = PlanWalker<Team, E>;
  using S = typename E::Storage;
  using Ends = typename Walker::Ends;
  using Traffic = typename Walker::Traffic;

  LOOM_HD explicit CodecProtocol(Walker& walker)
      : walker_(walker), team_(walker.team_), args_(walker.args_) {}

  /// One codec message (bulk protocol, wire_codec.h). Each group of lanes
  /// (a warp on a GPU) takes whole codec blocks, its lanes striding through
  /// the block so that neighbouring lanes touch neighbouring elements: a
  /// first pass finds the block's absmax (and stores the values to dst on a
  /// RecvReduce), a second encodes. The value of element i is src (Send) or
  /// src + the received value (the host ring's partial sum, in that order).
  LOOM_HD bool slice(const WalkStep& s, const Ends& e, uint64_t first, uint64_t n) {
    if constexpr (std::is_same_v<S, float>) {
      BulkProtocol<Team, E> bulk(walker_);
      const Traffic t = walker_.trafficOf(s, e);
      if (!bulk.slotsReady(t)) return false;
      const uint32_t block = walker_.call_->codecBlock;
      const wire::Int8Message<const char> in = wire::int8Message(
          t.in ? t.in->slots + t.inSlot * args_.bulkSlotBytes : nullptr, n, block);
      const wire::Int8Message<char> out = wire::int8Message(
          t.out ? t.out->slots + t.outSlot * args_.bulkSlotBytes : nullptr, n, block);
      const float* src = e.src;
      const bool receives = t.in != nullptr;
      auto value = [&](uint64_t i) {
        return receives ? codec::addRn(src[i], wire::decodedAt(in, i, block)) : src[i];
      };
      const uint32_t lanes = static_cast<uint32_t>(team_.laneCount());
      const uint32_t lane = static_cast<uint32_t>(team_.index()) % lanes;
      const uint64_t groups = static_cast<uint64_t>(team_.size()) / lanes;
      const uint64_t blocks = (n + block - 1) / block;
      const bool stochastic = walker_.call_->codecStochastic != 0;
      for (uint64_t b = static_cast<uint64_t>(team_.index()) / lanes; b < blocks; b += groups) {
        const uint64_t start = b * block;
        const uint64_t end = n - start < block ? n : start + block;
        uint32_t absmax = 0;
        for (uint64_t i = start + lane; i < end; i += lanes) {
          const float v = value(i);
          if (e.dst != nullptr) e.dst[i] = v;
          const uint32_t m = codec::magnitudeBits(v);
          absmax = m > absmax ? m : absmax;
        }
        if (t.out == nullptr) continue;  // lane-uniform: no lane waits in laneMax
        const codec::Int8Block scale = codec::int8BlockFromAbsmax(team_.laneMax(absmax));
        for (uint64_t i = start + lane; i < end; i += lanes) {
          out.codes()[i] =
              wire::encodeValue(value(i), scale, stochastic, s.codecKey, s.srcOffset + first + i);
        }
        if (lane == 0) out.scales()[b] = scale.scale;
      }
      bulk.publish(s, t);
      return true;
    } else {
      // Not reached: runSlice refuses codec steps of other types
      // (codecStepValid). The branch keeps the float-only code above out of
      // the other element types' walkers.
      if (team_.index() == 0) walker_.fail(WalkError::BadProgram, -1, 0);
      return false;
    }
  }

 private:
  Walker& walker_;
  Team& team_;
  const WalkArgs& args_;
};

}  // namespace loom::walk
