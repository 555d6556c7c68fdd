// Bulk messages (Protocol::Bulk, walk_types.h): the team fills a whole slot,
// then thread 0 publishes the message's number in the slot's ready flag. Two
// trips through memory per message, at full bandwidth: the protocol of large
// messages. A wire codec's messages (walk_codec.h) are bulk messages with
// another payload, so they take the same handshake (slotsReady, publish).
#pragma once

#include <cstdint>

#include "collectives/walker/walk_elements.h"
#include "collectives/walker/walk_types.h"
#include "math/half.h"  // LOOM_HD

namespace loom::walk {

template <typename Team, typename E>
class PlanWalker;  // plan_walker.h, which includes this file

/// One slice of a step by bulk messages; made by the walker per slice.
template <typename Team, typename E>
class BulkProtocol {
 public:
  using Walker = PlanWalker<Team, E>;
  using S = typename E::Storage;
  using Ends = typename Walker::Ends;
  using Traffic = typename Walker::Traffic;

  LOOM_HD explicit BulkProtocol(Walker& walker)
      : walker_(walker), team_(walker.team_), args_(walker.args_) {}

  /// Thread 0 waits until the incoming message is there and the outgoing
  /// slot is free; false, on every thread, when a wait failed.
  LOOM_HD bool slotsReady(const Traffic& t) {
    bool ok = true;
    if (team_.index() == 0) {
      if (t.in) ok = walker_.waitFor(t.in->ready + t.inSlot, Exactly{t.inMessage}, t.in->peer, 1);
      if (ok && t.out) {
        ok = walker_.waitFor(t.out->consumed, walker_.roomFor(t.outMessage), t.out->peer, 2);
      }
    }
    return !team_.syncOr(!ok);
  }

  /// After every thread wrote its share: thread 0 publishes the outgoing
  /// message and frees the incoming slot.
  LOOM_HD void publish(const WalkStep& s, const Traffic& t) {
    team_.sync();
    if (team_.index() == 0) {
      if (t.out) team_.storeRelease(t.out->ready + t.outSlot, t.outMessage);
      walker_.finishTraffic(s, t);
    }
  }

  LOOM_HD bool slice(const WalkStep& s, const Ends& e, uint64_t n) {
    const Traffic t = walker_.trafficOf(s, e);
    if (!slotsReady(t)) return false;

    const S* data =
        t.in ? reinterpret_cast<const S*>(t.in->slots + t.inSlot * args_.bulkSlotBytes) : nullptr;
    S* slot =
        t.out ? reinterpret_cast<S*>(t.out->slots + t.outSlot * args_.bulkSlotBytes) : nullptr;
    const bool finalize = s.finalize != 0;
    ElementLoops<Team, E> elements = walker_.elements();
    if (e.reduces) {
      // Into the local result first when there is one, then forward it.
      S* target = e.dst ? e.dst : slot;
      elements.reduce(target, e.src, data, n, walker_.call_->op, finalize);
      if (e.dst && slot) {
        team_.sync();  // the forward copy reads other threads' results
        elements.copy(slot, e.dst, n);
      }
    } else if (t.in) {
      if (e.dst) elements.copy(e.dst, data, n);
      if (slot) elements.copy(slot, data, n);
    } else {
      elements.copy(slot, e.src, n);
    }
    publish(s, t);
    return true;
  }

 private:
  /// A slot's ready flag holds the number of the message last written to it.
  struct Exactly {
    uint64_t value;
    LOOM_HD bool operator()(uint64_t v) const { return v == value; }
  };

  Walker& walker_;
  Team& team_;
  const WalkArgs& args_;
};

}  // namespace loom::walk
