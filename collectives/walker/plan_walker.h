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

#include "collectives/walker/walk_types.h"
#include "collectives/walker/wire_codec.h"
#include "math/half.h"  // LOOM_HD
#include "math/reduce_ops.h"

namespace loom::walk {

// StepKind and BufferId values (collectives/plan.h), repeated as constants
// because plan.h pulls in std::string, which device code cannot include.
namespace step {
inline constexpr uint8_t kSend = 0, kRecv = 1, kRecvReduce = 2, kRecvReduceSend = 3,
                         kRecvReduceCopySend = 4, kRecvCopySend = 5, kCopy = 6;
inline constexpr uint8_t kInput = 0, kOutput = 1, kScratch = 2;
}  // namespace step

inline constexpr uint8_t kOpSum = 0, kOpProd = 1, kOpMax = 2, kOpMin = 3, kOpAvg = 4;

/// Polls between clock reads: the clock costs more than a load.
inline constexpr uint32_t kSpinsPerClockRead = 64;

template <typename Team, typename E>
class PlanWalker {
 public:
  using S = typename E::Storage;
  static constexpr uint32_t kElementsPerUnit = kLlUnitBytes / sizeof(S);

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
  struct Exactly {
    uint64_t value;
    LOOM_HD bool operator()(uint64_t v) const { return v == value; }
  };
  /// Message m may be written once the receiver is done with m - slotCount,
  /// the one that used the same slot before it.
  LOOM_HD AtLeast roomFor(uint64_t message) const {
    return AtLeast{message > args_.slotCount ? message - args_.slotCount : 0};
  }
  struct LineCarries {
    uint32_t flag;
    LOOM_HD bool operator()(uint64_t v) const { return static_cast<uint32_t>(v >> 32) == flag; }
  };

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
      if (e.dst != e.src) copyElements(e.dst, e.src, n);
    } else if (s.codec != 0) {
      ok = codecSlice(s, e, first, n);
    } else if (s.protocol == static_cast<uint8_t>(Protocol::LowLatency)) {
      ok = lowLatencySlice(s, e, n);
    } else {
      ok = bulkSlice(s, e, n);
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

  // ---- bulk ----------------------------------------------------------------------

  /// Thread 0 waits until the incoming message is there and the outgoing
  /// slot is free; false, on every thread, when a wait failed.
  LOOM_HD bool bulkSlotsReady(const Traffic& t) {
    bool ok = true;
    if (team_.index() == 0) {
      if (t.in) ok = waitFor(t.in->ready + t.inSlot, Exactly{t.inMessage}, t.in->peer, 1);
      if (ok && t.out) ok = waitFor(t.out->consumed, roomFor(t.outMessage), t.out->peer, 2);
    }
    return !team_.syncOr(!ok);
  }

  /// After every thread wrote its share: thread 0 publishes the outgoing
  /// message and frees the incoming slot.
  LOOM_HD void publishBulk(const WalkStep& s, const Traffic& t) {
    team_.sync();
    if (team_.index() == 0) {
      if (t.out) team_.storeRelease(t.out->ready + t.outSlot, t.outMessage);
      finishTraffic(s, t);
    }
  }

  LOOM_HD bool bulkSlice(const WalkStep& s, const Ends& e, uint64_t n) {
    const Traffic t = trafficOf(s, e);
    if (!bulkSlotsReady(t)) return false;

    const S* data =
        t.in ? reinterpret_cast<const S*>(t.in->slots + t.inSlot * args_.bulkSlotBytes) : nullptr;
    S* slot =
        t.out ? reinterpret_cast<S*>(t.out->slots + t.outSlot * args_.bulkSlotBytes) : nullptr;
    const bool finalize = s.finalize != 0;
    if (e.reduces) {
      // Into the local result first when there is one, then forward it.
      S* target = e.dst ? e.dst : slot;
      reduceElements(target, e.src, data, n, finalize);
      if (e.dst && slot) {
        team_.sync();  // the forward copy reads other threads' results
        copyElements(slot, e.dst, n);
      }
    } else if (t.in) {
      if (e.dst) copyElements(e.dst, data, n);
      if (slot) copyElements(slot, data, n);
    } else {
      copyElements(slot, e.src, n);
    }
    publishBulk(s, t);
    return true;
  }

  // ---- a wire codec ------------------------------------------------------------------

  /// One codec message (bulk protocol, wire_codec.h). Each group of lanes
  /// (a warp on a GPU) takes whole codec blocks, its lanes striding through
  /// the block so that neighbouring lanes touch neighbouring elements: a
  /// first pass finds the block's absmax (and stores the values to dst on a
  /// RecvReduce), a second encodes. The value of element i is src (Send) or
  /// src + the received value (the host ring's partial sum, in that order).
  LOOM_HD bool codecSlice(const WalkStep& s, const Ends& e, uint64_t first, uint64_t n) {
    if constexpr (std::is_same_v<S, float>) {
      const Traffic t = trafficOf(s, e);
      if (!bulkSlotsReady(t)) return false;
      const uint32_t block = call_->codecBlock;
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
      const bool stochastic = call_->codecStochastic != 0;
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
      publishBulk(s, t);
      return true;
    } else {
      if (team_.index() == 0) fail(WalkError::BadProgram, -1, 0);
      return false;
    }
  }

  // ---- low latency ----------------------------------------------------------------

  union Unit {
    uint64_t raw;
    S v[kElementsPerUnit];
  };

  LOOM_HD bool lowLatencySlice(const WalkStep& s, const Ends& e, uint64_t n) {
    const Traffic t = trafficOf(s, e);
    bool ok = true;
    if (t.out && team_.index() == 0) {
      ok = waitFor(t.out->consumed, roomFor(t.outMessage), t.out->peer, 2);
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
    if (team_.index() == 0) finishTraffic(s, t);
    return true;
  }

  LOOM_HD bool readUnit(const uint64_t* line, uint32_t flag, int32_t peer, uint64_t& payload) {
    uint64_t low = 0;
    uint64_t high = 0;
    if (!waitFor(line, LineCarries{flag}, peer, 1, false)) return false;
    if (!waitFor(line + 1, LineCarries{flag}, peer, 1, false)) return false;
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

  // ---- element loops (this thread's share) -----------------------------------------

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
  LOOM_HD void mapElements(S* dst, const S* a, const S* b, uint64_t n, F f) {
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
  struct Combine {
    int nranks;
    bool finalize;  // avg's division, on the step that completes the sum
    LOOM_HD S operator()(S x, S y) const {
      const S r = E::narrow(Op::template apply<typename E::Compute>(E::widen(x), E::widen(y)));
      return finalize ? E::narrow(kernels::divideByRanks(E::widen(r), nranks)) : r;
    }
  };

  LOOM_HD void copyElements(S* dst, const S* src, uint64_t n) {
    mapElements(dst, src, nullptr, n, TakeFirst{});
  }

  template <typename Op>
  LOOM_HD void reduceWith(S* dst, const S* a, const S* b, uint64_t n, bool finalize) {
    mapElements(dst, a, b, n, Combine<Op>{args_.nranks, finalize});
  }

  /// dst = a (op) b, then the op's final transform when `finalize`. The op is
  /// the same for the whole call, so the switch is taken once per slice.
  LOOM_HD void reduceElements(S* dst, const S* a, const S* b, uint64_t n, bool finalize) {
    const bool avg = call_->op == kOpAvg;
    switch (call_->op) {
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

  LOOM_HD void reduceUnit(Unit& result, const Unit& a, const Unit& b, uint32_t valid,
                          bool finalize) {
    const bool avg = finalize && call_->op == kOpAvg;
    for (uint32_t k = 0; k < valid; ++k) {
      switch (call_->op) {
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

  Team& team_;
  const WalkArgs& args_;
  const WalkChannel& channel_;
  WalkStatus& status_;
  const WalkCallArgs* call_ = nullptr;  ///< the call whose steps run now
  int32_t stepIndex_ = -1;
};

}  // namespace loom::walk
