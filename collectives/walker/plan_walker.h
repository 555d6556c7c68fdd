// The plan walker: one team of threads runs one channel of one rank's plan
// over FIFOs in memory, message by message. On a GPU a team is a thread block
// (collectives/cuda/walk_kernel.cu); in host tests it is a few std::threads
// (tests/unit/test_plan_walker.cc). Both compile this one source, so the
// protocol logic the GPU runs is the logic the host tests exercise.
//
// The walk is slice-outer, as the host executor's (collectives/executor/
// slice_cursor.h): iteration i runs slice i of every step before slice i+1,
// which pipelines a ring through the FIFOs and is the order both ends of every
// connection derive from the plan, so message numbers agree without a handshake.
//
// This file is the walker itself: calls, slices, message counters, waits,
// failures, buffers. How a slice's messages cross a connection is one class
// per protocol beside it, each made per slice over this walker (a friend), so
// a protocol reads on its own:
//   walk_bulk.h         whole slots behind a ready flag: large messages
//   walk_low_latency.h  data and flag in one store: small messages
//   walk_codec.h        a wire codec's int8 blocks, in bulk messages
//   walk_elements.h     the element loops they all share
//
// Team: a duck-typed policy with
//   index(), size()           this thread's place in the team
//   sync()                    team barrier
//   syncOr(bool)              team barrier returning whether any thread passed true
//   loadAcquire / storeRelease / loadRelaxed / storeRelaxed on uint64_t
//   nowNs()                   a monotonic clock
//   relax()                   called between polls (host threads yield: ranks
//                             may outnumber cores)
//   aborted(const volatile uint32_t*)  whether the abort word is set
//   claim(uint32_t* word, v)  sets *word from 0 to v atomically; whether it did
//   counters()                2 x kMaxConnections uint64_t shared by the team
//   laneCount()               threads that work in lockstep without the team
//                             barrier (a warp on a GPU); divides size()
//   laneMax(uint32_t)         the largest value among this thread's lanes
//                             (threads index / laneCount alike); every lane
//                             of the group calls it
// Element type E: device/element_types.cuh (Storage, Compute, widen, narrow).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collectives/walker/walk_bulk.h"
#include "collectives/walker/walk_codec.h"
#include "collectives/walker/walk_elements.h"
#include "collectives/walker/walk_low_latency.h"
#include "collectives/walker/walk_types.h"
#include "math/half.h"  // LOOM_HD

namespace loom::walk {

// StepKind and BufferId values (collectives/plan.h), repeated as constants
// because plan.h pulls in std::string, which device code cannot include.
namespace step {
inline constexpr uint8_t kSend = 0, kRecv = 1, kRecvReduce = 2, kRecvReduceSend = 3,
                         kRecvReduceCopySend = 4, kRecvCopySend = 5, kCopy = 6;
inline constexpr uint8_t kInput = 0, kOutput = 1, kScratch = 2;
}  // namespace step

/// Polls between clock reads: the clock costs more than a load.
inline constexpr uint32_t kSpinsPerClockRead = 64;

template <typename Team, typename E>
class PlanWalker {
 public:
  using S = typename E::Storage;

  LOOM_HD PlanWalker(Team& team, const WalkArgs& args, uint32_t channel)
      : team_(team), args_(args), channel_(args.channels[channel]), status_(args.status[channel]) {}

  /// Runs the channel; false when a wait failed (status says why).
  LOOM_HD bool run() {
    if (!loadCounters()) return false;
    // The steps of one call are contiguous; calls run one after another, as
    // separate launches would, so both ends of a connection number its
    // messages alike whether or not a peer fused the same calls.
    for (uint32_t begin = 0; begin < channel_.stepCount;) {
      const uint32_t call = channel_.steps[begin].call;
      uint32_t end = begin + 1;
      while (end < channel_.stepCount && channel_.steps[end].call == call) ++end;
      if (call >= args_.callCount) {
        if (team_.index() == 0) fail(WalkError::BadProgram, -1, 0);
        return false;
      }
      call_ = &args_.calls[call];
      if (!runCall(begin, end)) return false;
      begin = end;
    }
    if (!drainCredits()) return false;
    storeCounters();
    return true;
  }

 private:
  // The protocols are this class's parts, split out to be read one at a time:
  // they use its waits, counters and current call as its own methods did.
  friend class BulkProtocol<Team, E>;
  friend class CodecProtocol<Team, E>;
  friend class LowLatencyProtocol<Team, E>;

  /// Elements per message of a step: its protocol's slot payload.
  LOOM_HD uint64_t sliceOf(const WalkStep& s) const {
    if (s.codec != 0) {
      // A block too large for a slot is refused by runSlice; 1 keeps the count finite.
      const uint64_t elements = codecSliceElements(args_.bulkSlotBytes, call_->codecBlock);
      return elements > 0 ? elements : 1;
    }
    return s.protocol == static_cast<uint8_t>(Protocol::LowLatency) ? args_.llSliceElements
                                                                    : args_.bulkSliceElements;
  }

  /// Steps [begin, end) of one call, slice-outer: iteration i runs slice i of
  /// every step (each with its own protocol's slice) before slice i + 1.
  LOOM_HD bool runCall(uint32_t begin, uint32_t end) {
    uint64_t iterations = 0;
    for (uint32_t j = begin; j < end; ++j) {
      const uint64_t slice = sliceOf(channel_.steps[j]);
      const uint64_t n = (channel_.steps[j].count + slice - 1) / slice;
      iterations = n > iterations ? n : iterations;
    }
    for (uint64_t it = 0; it < iterations; ++it) {
      for (uint32_t j = begin; j < end; ++j) {
        const WalkStep& s = channel_.steps[j];
        const uint64_t slice = sliceOf(s);
        const uint64_t first = it * slice;
        if (first >= s.count) continue;
        const uint64_t left = s.count - first;
        stepIndex_ = static_cast<int32_t>(j);
        if (!runSlice(s, first, left < slice ? left : slice)) return false;
      }
    }
    return true;
  }

  /// Waits until every receiver has consumed this walk's last message. After
  /// that no peer writes into this rank's memory for this walk, so the host
  /// may free or rebuild the FIFOs once the walk has finished, without a
  /// barrier with its peers.
  LOOM_HD bool drainCredits() {
    bool ok = true;
    if (team_.index() == 0) {
      for (uint32_t c = 0; c < channel_.sendCount && ok; ++c) {
        const SendConnection& out = channel_.sends[c];
        ok = waitFor(out.consumed, AtLeast{sentCounters()[c]}, out.peer, 2);
      }
    }
    return !team_.syncOr(!ok);
  }

  // ---- team-shared message counters ---------------------------------------

  LOOM_HD uint64_t* sentCounters() { return team_.counters(); }
  LOOM_HD uint64_t* receivedCounters() { return team_.counters() + kMaxConnections; }

  LOOM_HD bool loadCounters() {
    if (channel_.sendCount > kMaxConnections || channel_.recvCount > kMaxConnections) {
      if (team_.index() == 0) fail(WalkError::BadProgram, -1, 0);
      return false;
    }
    if (team_.index() == 0) {
      for (uint32_t c = 0; c < channel_.sendCount; ++c) {
        sentCounters()[c] = *channel_.sends[c].sent;
      }
      for (uint32_t c = 0; c < channel_.recvCount; ++c) {
        receivedCounters()[c] = *channel_.recvs[c].received;
      }
    }
    team_.sync();
    return true;
  }

  LOOM_HD void storeCounters() {
    team_.sync();
    if (team_.index() != 0) return;
    for (uint32_t c = 0; c < channel_.sendCount; ++c) *channel_.sends[c].sent = sentCounters()[c];
    for (uint32_t c = 0; c < channel_.recvCount; ++c) {
      *channel_.recvs[c].received = receivedCounters()[c];
    }
  }

  // ---- failure --------------------------------------------------------------

  /// Records the first failure of the channel; any thread may call it (the
  /// low-latency waits run on every thread), the first to claim the word wins.
  LOOM_HD void fail(WalkError error, int32_t peer, uint32_t waitingFor) {
    if (!team_.claim(&status_.error, static_cast<uint32_t>(error))) return;
    status_.step = stepIndex_;
    status_.peer = peer;
    status_.waitingFor = waitingFor;
  }

  /// Spins until `*word` passes `ready`, the wait's deadline (timeoutNs
  /// from its first clock read: a long walk that keeps moving never times
  /// out) or an abort. Returns false, with the status set, on the latter two.
  /// `acquire` orders later reads after the word; a low-latency line carries
  /// its own data, so it polls relaxed (an acquire at system scope on every
  /// poll of every thread would keep invalidating the SM's cache).
  template <typename Ready>
  LOOM_HD bool waitFor(const uint64_t* word, Ready ready, int32_t peer, uint32_t waitingFor,
                       bool acquire = true) {
    uint64_t started = 0;
    for (uint64_t spins = 1;; ++spins) {
      if (ready(acquire ? team_.loadAcquire(word) : team_.loadRelaxed(word))) return true;
      team_.relax();
      if (spins % kSpinsPerClockRead != 0) continue;
      if (args_.abort != nullptr && team_.aborted(args_.abort)) {
        fail(WalkError::Aborted, peer, waitingFor);
        return false;
      }
      const uint64_t now = team_.nowNs();
      if (spins == kSpinsPerClockRead) {
        started = now;
      } else if (now - started > args_.timeoutNs) {
        fail(WalkError::Timeout, peer, waitingFor);
        return false;
      }
    }
  }

  struct AtLeast {
    uint64_t value;
    LOOM_HD bool operator()(uint64_t v) const { return v >= value; }
  };
  /// Message m may be written once the receiver is done with m - slotCount,
  /// the one that used the same slot before it.
  LOOM_HD AtLeast roomFor(uint64_t message) const {
    return AtLeast{message > args_.slotCount ? message - args_.slotCount : 0};
  }

  // ---- buffers ----------------------------------------------------------------

  LOOM_HD char* bufferAt(uint8_t buffer, uint64_t element) const {
    const uint64_t byte = element * args_.elementSize;
    switch (buffer) {
      case step::kInput:
        return const_cast<char*>(call_->input) + byte;
      case step::kOutput:
        return call_->output + byte;
      default:
        return call_->scratch + byte;
    }
  }

  // ---- one slice of one step ----------------------------------------------------

  struct Ends {
    const S* src = nullptr;  // local operand
    S* dst = nullptr;        // local result, or null
    bool receives = false;
    bool sends = false;
    bool reduces = false;
  };

  LOOM_HD Ends endsOf(const WalkStep& s, uint64_t first) const {
    Ends e;
    e.src = reinterpret_cast<const S*>(bufferAt(s.srcBuffer, s.srcOffset + first));
    switch (s.kind) {
      case step::kSend:
        e.sends = true;
        break;
      case step::kRecv:
        e.receives = true;
        e.dst = reinterpret_cast<S*>(bufferAt(s.dstBuffer, s.dstOffset + first));
        break;
      case step::kRecvReduce:
        e.receives = e.reduces = true;
        e.dst = reinterpret_cast<S*>(bufferAt(s.dstBuffer, s.dstOffset + first));
        break;
      case step::kRecvReduceSend:
        e.receives = e.reduces = e.sends = true;
        break;
      case step::kRecvReduceCopySend:
        e.receives = e.reduces = e.sends = true;
        e.dst = reinterpret_cast<S*>(bufferAt(s.dstBuffer, s.dstOffset + first));
        break;
      case step::kRecvCopySend:
        e.receives = e.sends = true;
        e.dst = reinterpret_cast<S*>(bufferAt(s.dstBuffer, s.dstOffset + first));
        break;
      default:  // kCopy
        e.dst = reinterpret_cast<S*>(bufferAt(s.dstBuffer, s.dstOffset + first));
        break;
    }
    return e;
  }

  /// A codec step the walker can run: fp32, a block that fits a slot, bulk
  /// messages and one of the kinds a wire codec defines (walk_program.h).
  LOOM_HD bool codecStepValid(const WalkStep& s) const {
    return std::is_same_v<S, float> &&
           codecSliceElements(args_.bulkSlotBytes, call_->codecBlock) > 0 &&
           s.protocol == static_cast<uint8_t>(Protocol::Bulk) &&
           (s.kind == step::kSend || s.kind == step::kRecvReduceSend ||
            s.kind == step::kRecvReduce);
  }

  LOOM_HD bool runSlice(const WalkStep& s, uint64_t first, uint64_t n) {
    if (s.kind > step::kCopy || s.protocol > static_cast<uint8_t>(Protocol::LowLatency) ||
        (s.codec != 0 && !codecStepValid(s))) {
      if (team_.index() == 0) fail(WalkError::BadProgram, -1, 0);
      return false;
    }
    const Ends e = endsOf(s, first);
    if ((e.sends &&
         (s.sendConnection < 0 || static_cast<uint32_t>(s.sendConnection) >= channel_.sendCount)) ||
        (e.receives &&
         (s.recvConnection < 0 || static_cast<uint32_t>(s.recvConnection) >= channel_.recvCount))) {
      if (team_.index() == 0) fail(WalkError::BadProgram, -1, 0);
      return false;
    }
    bool ok = true;
    if (!e.sends && !e.receives) {
      if (e.dst != e.src) elements().copy(e.dst, e.src, n);
    } else if (s.codec != 0) {
      ok = CodecProtocol<Team, E>(*this).slice(s, e, first, n);
    } else if (s.protocol == static_cast<uint8_t>(Protocol::LowLatency)) {
      ok = LowLatencyProtocol<Team, E>(*this).slice(s, e, n);
    } else {
      ok = BulkProtocol<Team, E>(*this).slice(s, e, n);
    }
    // Later steps may read what this one wrote, with another thread per element.
    return !team_.syncOr(!ok);
  }

  // ---- the messages of one slice ----------------------------------------------------

  /// The connections a slice uses and the numbers (1-based) of its messages.
  struct Traffic {
    const RecvConnection* in = nullptr;
    const SendConnection* out = nullptr;
    uint64_t inMessage = 0;
    uint64_t outMessage = 0;
    uint64_t inSlot = 0;  // (message - 1) % slotCount: the slot each message uses
    uint64_t outSlot = 0;
  };

  LOOM_HD Traffic trafficOf(const WalkStep& s, const Ends& e) {
    Traffic t;
    if (e.receives) {
      t.in = &channel_.recvs[s.recvConnection];
      t.inMessage = receivedCounters()[s.recvConnection] + 1;
      t.inSlot = (t.inMessage - 1) % args_.slotCount;
    }
    if (e.sends) {
      t.out = &channel_.sends[s.sendConnection];
      t.outMessage = sentCounters()[s.sendConnection] + 1;
      t.outSlot = (t.outMessage - 1) % args_.slotCount;
    }
    return t;
  }

  /// Thread 0, after the team's last access to the slice's slots: counts the
  /// messages and frees the received slot for its sender.
  LOOM_HD void finishTraffic(const WalkStep& s, const Traffic& t) {
    if (t.out) sentCounters()[s.sendConnection] = t.outMessage;
    if (t.in) {
      team_.storeRelease(t.in->consumed, t.inMessage);
      receivedCounters()[s.recvConnection] = t.inMessage;
    }
  }

  // ---- element loops ------------------------------------------------------------------

  /// This thread's share of a copy or reduction (walk_elements.h).
  LOOM_HD ElementLoops<Team, E> elements() { return ElementLoops<Team, E>(team_, args_); }

  Team& team_;
  const WalkArgs& args_;
  const WalkChannel& channel_;
  WalkStatus& status_;
  const WalkCallArgs* call_ = nullptr;  ///< the call whose steps run now
  int32_t stepIndex_ = -1;
};

}  // namespace loom::walk
