#include "collectives/walker/walk_program.h"

#include <algorithm>
#include <cstring>

#include "compression/counter_hash.h"
#include "core/error.h"

namespace loom::walk {
namespace {

constexpr size_t kArenaAlignment = 256;  // cudaMalloc's, so slots stay 16-byte aligned

size_t alignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

/// Where an element range of `count` starts for channel `c` of `channels`.
size_t channelBegin(size_t count, uint32_t c, uint32_t channels, size_t unit) {
  if (c >= channels) return count;
  const size_t share = static_cast<size_t>(static_cast<unsigned __int128>(count) * c / channels);
  return std::min(count, share / unit * unit);
}

/// Channel `channel`'s share of step `s` into `part`; false when it is empty.
bool channelShare(const Step& s, uint32_t channel, uint32_t channels, size_t unitElements,
                  Step& part) {
  const size_t unit = std::max<size_t>(1, unitElements);
  const size_t begin = channelBegin(s.count, channel, channels, unit);
  const size_t end = channelBegin(s.count, channel + 1, channels, unit);
  if (end <= begin) return false;
  part = s;
  part.count = end - begin;
  part.src.offset += begin;
  part.dst.offset += begin;
  return true;
}

/// Distinct peers in order of first use, and each step's index among them.
struct Peers {
  std::vector<int> ranks;
  int indexOf(int peer) {
    const auto it = std::find(ranks.begin(), ranks.end(), peer);
    if (it != ranks.end()) return static_cast<int>(it - ranks.begin());
    ranks.push_back(peer);
    return static_cast<int>(ranks.size()) - 1;
  }
};

/// Appends `bytes` (rounded up to words) and returns their byte offset.
size_t reserve(std::vector<uint64_t>& words, size_t bytes) {
  const size_t offset = words.size() * 8;
  words.resize(words.size() + (bytes + 7) / 8, 0);
  return offset;
}

}  // namespace

void FifoGeometry::validate() const {
  if (channels == 0 || slotCount == 0 || bulkSlotBytes == 0 || bulkSlotBytes % 16 != 0 ||
      llSlotLines < 2 || llSlotLines % 2 != 0) {
    raise(ErrorCode::InvalidArgument,
          "FIFO geometry needs channels, slots, a bulk slot that is a nonzero multiple of 16 "
          "bytes and an even number (>= 2) of low-latency lines; got channels {}, slots {}, bulk "
          "{} bytes, {} lines",
          channels, slotCount, bulkSlotBytes, llSlotLines);
  }
}

ArenaLayout::ArenaLayout(const FifoGeometry& geometry, int nranks)
    : geometry_(geometry), nranks_(nranks) {
  geometry.validate();
  slots_ = alignUp(8 * static_cast<size_t>(geometry.slotCount) + 24, kArenaAlignment);
  blockBytes_ =
      alignUp(lines() + static_cast<size_t>(geometry.slotCount) * geometry.llSlotLines * 8,
              kArenaAlignment);
}

Protocol chooseProtocol(const FifoGeometry& geometry, size_t callBytes) {
  // llMaxCallBytes 0 turns low latency off altogether, empty calls included
  // (a proxied walk must stay bulk).
  return geometry.llMaxCallBytes > 0 && callBytes <= geometry.llMaxCallBytes ? Protocol::LowLatency
                                                                             : Protocol::Bulk;
}

size_t sliceElementsFor(const FifoGeometry& geometry, Protocol protocol, size_t elementSize) {
  const size_t bytes =
      protocol == Protocol::LowLatency ? geometry.llSlotPayloadBytes() : geometry.bulkSlotBytes;
  return std::max<size_t>(1, bytes / elementSize);
}

std::vector<Step> channelSteps(const RankPlan& plan, uint32_t channel, uint32_t channels,
                               size_t unitElements) {
  std::vector<Step> out;
  for (const auto& stream : plan.streams) {
    for (const Step& s : stream) {
      Step part;
      if (channelShare(s, channel, channels, unitElements, part)) out.push_back(part);
    }
  }
  return out;
}

size_t sliceElementsOf(const ChannelStep& cs, const FifoGeometry& geometry, DataType type,
                       uint32_t codecBlock) {
  if (cs.codec) return codecSliceElements(geometry.bulkSlotBytes, codecBlock);
  return sliceElementsFor(geometry, cs.protocol, dataTypeSize(type));
}

namespace {

/// A wire codec's call must be one the walker can encode: fp32 summed, bulk
/// messages of whole codec blocks, and the steps the codec defines.
void checkCodecPart(const WalkPart& part, size_t index, DataType type,
                    const FifoGeometry& geometry) {
  const WireCodec& codec = part.codec;
  if (type != DataType::Float32 || part.op != ReduceOp::Sum) {
    raise(ErrorCode::InvalidArgument, "walk part {}: a wire codec walks float32 sums, not {} {}",
          index, dataTypeName(type), reduceOpName(part.op));
  }
  if (codecSliceElements(geometry.bulkSlotBytes, codec.block) == 0) {
    raise(ErrorCode::InvalidArgument,
          "walk part {}: a codec block of {} elements ({} B encoded) does not fit a {} B bulk "
          "slot",
          index, codec.block, codecMessageBytes(codec.block, codec.block), geometry.bulkSlotBytes);
  }
  if (part.plan->streams.size() > 1) {
    raise(ErrorCode::InvalidArgument, "walk part {}: a wire codec's plan has one stream", index);
  }
  for (const auto& stream : part.plan->streams) {
    for (const Step& s : stream) {
      if (s.kind != StepKind::Send && s.kind != StepKind::RecvReduceSend &&
          s.kind != StepKind::RecvReduce) {
        raise(ErrorCode::InvalidArgument,
              "walk part {}: a wire codec encodes Send, RecvReduceSend and RecvReduce, not {}",
              index, toString(s));
      }
    }
  }
}

}  // namespace

WalkPart WalkCall::partFor(const RankPlan& plan) const {
  return {.plan = &plan,
          .op = op,
          .protocol = protocol,
          .input = input,
          .output = output,
          .scratch = scratch};
}

std::vector<ChannelStep> channelWalk(std::span<const WalkPart> parts, DataType type,
                                     const FifoGeometry& geometry, uint32_t channel) {
  const size_t es = dataTypeSize(type);
  // Channel shares in whole 16-byte packs where the count allows.
  const size_t unit = std::max<size_t>(1, 16 / es);
  std::vector<ChannelStep> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    const WalkPart& part = parts[i];
    if (part.plan == nullptr) raise(ErrorCode::InvalidArgument, "walk part {} has no plan", i);
    const WireCodec& codec = part.codec;
    if (codec.active()) checkCodecPart(part, i, type, geometry);
    // A codec cuts channels on its blocks, as the host encodes a chunk whole.
    const size_t partUnit = codec.active() ? codec.block : unit;
    uint64_t index = 0;
    for (const auto& stream : part.plan->streams) {
      for (const Step& s : stream) {
        const uint64_t stepIndex = index++;
        ChannelStep cs;
        if (!channelShare(s, channel, geometry.channels, partUnit, cs.step)) continue;
        cs.call = static_cast<uint32_t>(i);
        if (codec.active()) {
          cs.protocol = Protocol::Bulk;
          cs.codec = true;
          cs.codecKey = codec::streamKey(codec.seed, codec.counter + stepIndex);
        } else {
          // A step's protocol follows its whole size, before the channels cut it.
          cs.protocol =
              part.protocolPerStep ? chooseProtocol(geometry, s.count * es) : part.protocol;
        }
        out.push_back(cs);
      }
    }
  }
  return out;
}

WalkProgram buildWalkProgram(const RankPlan& plan, const WalkCall& call,
                             const FifoGeometry& geometry, std::span<char* const> arenas,
                             uintptr_t base) {
  FifoRoutes routes;
  routes.arenas = arenas;
  return buildWalkProgram(plan, call, geometry, routes, base);
}

WalkProgram buildWalkProgram(const RankPlan& plan, const WalkCall& call,
                             const FifoGeometry& geometry, const FifoRoutes& routes,
                             uintptr_t base) {
  const WalkPart part = call.partFor(plan);
  return buildWalkProgram({&part, 1}, call, geometry, routes, base);
}

size_t programBytesBound(uint32_t channels, size_t connections, size_t steps, size_t calls) {
  auto words = [](size_t bytes) { return (bytes + 7) / 8 * 8; };  // as reserve() rounds
  const size_t perChannel = words(sizeof(SendConnection) * connections) +
                            words(sizeof(RecvConnection) * connections) +
                            words(sizeof(WalkStep) * steps);
  return words(sizeof(WalkArgs)) + words(sizeof(WalkCallArgs) * calls) +
         words(sizeof(WalkChannel) * channels) + words(sizeof(WalkStatus) * channels) +
         channels * perChannel;
}

WalkProgram buildWalkProgram(std::span<const WalkPart> parts, const WalkLaunch& launch,
                             const FifoGeometry& geometry, const FifoRoutes& routes,
                             uintptr_t base) {
  const ArenaLayout layout(geometry, launch.nranks);
  const std::span<char* const> arenas = routes.arenas;
  if (arenas.size() != static_cast<size_t>(launch.nranks) || launch.rank < 0 ||
      launch.rank >= launch.nranks) {
    raise(ErrorCode::InvalidArgument, "walk program for rank {} of {} got {} arenas", launch.rank,
          launch.nranks, arenas.size());
  }
  if (parts.empty()) raise(ErrorCode::InvalidArgument, "a walk program needs at least one call");
  if (!routes.proxied.empty() && (routes.proxied.size() != arenas.size() ||
                                  routes.outbox == nullptr || routes.inbox == nullptr)) {
    raise(ErrorCode::InvalidArgument, "proxied routes need a flag per rank and both mailboxes");
  }
  auto proxied = [&](int peer) {
    return !routes.proxied.empty() && routes.proxied[static_cast<size_t>(peer)] != 0;
  };
  const size_t es = dataTypeSize(launch.type);
  const uint32_t channels = geometry.channels;

  struct ChannelPlan {
    Peers sends;
    Peers recvs;
    std::vector<WalkStep> walk;
  };
  std::vector<ChannelPlan> walks(channels);
  for (uint32_t c = 0; c < channels; ++c) {
    ChannelPlan& part = walks[c];
    for (const ChannelStep& cs : channelWalk(parts, launch.type, geometry, c)) {
      const Step& s = cs.step;
      if (!routes.proxied.empty() && (channels != 1 || cs.protocol != Protocol::Bulk)) {
        raise(ErrorCode::InvalidArgument,
              "a walk through proxies runs one channel with the bulk protocol (got {} channels, "
              "{})",
              channels, cs.protocol == Protocol::Bulk ? "bulk" : "low latency");
      }
      WalkStep w;
      w.kind = static_cast<uint8_t>(s.kind);
      w.finalize = s.finalize ? 1 : 0;
      w.srcBuffer = static_cast<uint8_t>(s.src.buffer);
      w.dstBuffer = static_cast<uint8_t>(s.dst.buffer);
      w.protocol = static_cast<uint8_t>(cs.protocol);
      w.codec = cs.codec ? 1 : 0;
      w.codecKey = cs.codecKey;
      w.call = cs.call;
      w.srcOffset = s.src.offset;
      w.dstOffset = s.dst.offset;
      w.count = s.count;
      for (const int peer :
           {stepSends(s.kind) ? s.sendPeer : -2, stepReceives(s.kind) ? s.recvPeer : -2}) {
        if (peer == -2) continue;
        if (peer < 0 || peer >= launch.nranks || peer == launch.rank) {
          raise(ErrorCode::InvalidArgument, "plan step {} of rank {} names peer {} of {}",
                toString(s), launch.rank, peer, launch.nranks);
        }
      }
      if (stepSends(s.kind)) w.sendConnection = part.sends.indexOf(s.sendPeer);
      if (stepReceives(s.kind)) w.recvConnection = part.recvs.indexOf(s.recvPeer);
      part.walk.push_back(w);
    }
    if (part.sends.ranks.size() > kMaxConnections || part.recvs.ranks.size() > kMaxConnections) {
      raise(ErrorCode::InvalidArgument,
            "rank {} talks to {} peers on one channel; the plan walker keeps at most {}",
            launch.rank, std::max(part.sends.ranks.size(), part.recvs.ranks.size()),
            kMaxConnections);
    }
  }

  WalkProgram program;
  program.channels = channels;
  std::vector<uint64_t>& words = program.words;
  const size_t argsAt = reserve(words, sizeof(WalkArgs));
  const size_t callsAt = reserve(words, sizeof(WalkCallArgs) * parts.size());
  const size_t channelsAt = reserve(words, sizeof(WalkChannel) * channels);
  program.statusOffset = reserve(words, sizeof(WalkStatus) * channels);
  std::vector<size_t> sendsAt(channels), recvsAt(channels), stepsAt(channels);
  for (uint32_t c = 0; c < channels; ++c) {
    sendsAt[c] = reserve(words, sizeof(SendConnection) * walks[c].sends.ranks.size());
    recvsAt[c] = reserve(words, sizeof(RecvConnection) * walks[c].recvs.ranks.size());
    stepsAt[c] = reserve(words, sizeof(WalkStep) * walks[c].walk.size());
  }
  auto* bytes = reinterpret_cast<char*>(words.data());
  // `base` is an address where the walker runs (often device memory): the
  // pointers are made for it, never dereferenced here.
  auto at = [&](size_t offset) {
    return reinterpret_cast<char*>(base + offset);  // NOLINT(performance-no-int-to-ptr)
  };

  const int me = launch.rank;
  // A missing arena would only show as a fault in the kernel.
  auto requireArena = [&](int rank) {
    if (arenas[static_cast<size_t>(rank)] == nullptr) {
      raise(ErrorCode::InvalidArgument, "walk program for rank {}: no arena for rank {}", me, rank);
    }
  };
  requireArena(me);
  for (uint32_t c = 0; c < channels; ++c) {
    const ChannelPlan& part = walks[c];
    for (const int peer : part.sends.ranks) {
      if (!proxied(peer)) requireArena(peer);
    }
    for (const int peer : part.recvs.ranks) {
      if (!proxied(peer)) requireArena(peer);
    }
    for (size_t i = 0; i < part.sends.ranks.size(); ++i) {
      const int peer = part.sends.ranks[i];
      // A proxied peer's FIFO and credit are this rank's outbox block, which
      // the proxy drains to the network.
      char* fifo = proxied(peer) ? routes.outbox + layout.block(c, peer)
                                 : arenas[peer] + layout.block(c, me);
      char* mine = arenas[me] + layout.block(c, peer);
      char* credit = proxied(peer) ? fifo : mine;
      SendConnection s;
      s.slots = fifo + layout.slots();
      s.ready = reinterpret_cast<uint64_t*>(fifo + ArenaLayout::kReady);
      s.lines = reinterpret_cast<uint64_t*>(fifo + layout.lines());
      s.consumed = reinterpret_cast<const uint64_t*>(credit + layout.consumed());
      s.sent = reinterpret_cast<uint64_t*>(mine + layout.sent());
      s.peer = peer;
      std::memcpy(bytes + sendsAt[c] + i * sizeof(SendConnection), &s, sizeof s);
    }
    for (size_t i = 0; i < part.recvs.ranks.size(); ++i) {
      const int peer = part.recvs.ranks[i];
      char* mine = arenas[me] + layout.block(c, peer);
      // A proxied peer's messages arrive in this rank's inbox block, and the
      // credit goes to the proxy there.
      char* fifo = proxied(peer) ? routes.inbox + layout.block(c, peer) : mine;
      char* credit = proxied(peer) ? fifo : arenas[peer] + layout.block(c, me);
      RecvConnection r;
      r.slots = fifo + layout.slots();
      r.ready = reinterpret_cast<const uint64_t*>(fifo + ArenaLayout::kReady);
      r.lines = reinterpret_cast<const uint64_t*>(fifo + layout.lines());
      r.consumed = reinterpret_cast<uint64_t*>(credit + layout.consumed());
      r.received = reinterpret_cast<uint64_t*>(mine + layout.received());
      r.peer = peer;
      std::memcpy(bytes + recvsAt[c] + i * sizeof(RecvConnection), &r, sizeof r);
    }
    if (!part.walk.empty()) {
      std::memcpy(bytes + stepsAt[c], part.walk.data(), sizeof(WalkStep) * part.walk.size());
    }
    WalkChannel ch;
    ch.steps = reinterpret_cast<const WalkStep*>(at(stepsAt[c]));
    ch.stepCount = static_cast<uint32_t>(part.walk.size());
    ch.sendCount = static_cast<uint32_t>(part.sends.ranks.size());
    ch.recvCount = static_cast<uint32_t>(part.recvs.ranks.size());
    ch.sends = reinterpret_cast<SendConnection*>(at(sendsAt[c]));
    ch.recvs = reinterpret_cast<RecvConnection*>(at(recvsAt[c]));
    std::memcpy(bytes + channelsAt + c * sizeof(WalkChannel), &ch, sizeof ch);
    const WalkStatus fresh;
    std::memcpy(bytes + program.statusOffset + c * sizeof(WalkStatus), &fresh, sizeof fresh);
  }

  for (size_t i = 0; i < parts.size(); ++i) {
    WalkCallArgs ca;
    ca.input = parts[i].input;
    ca.output = parts[i].output;
    ca.scratch = parts[i].scratch;
    ca.op = static_cast<uint8_t>(parts[i].op);
    ca.codecBlock = parts[i].codec.block;
    ca.codecStochastic = parts[i].codec.stochastic ? 1 : 0;
    std::memcpy(bytes + callsAt + i * sizeof(WalkCallArgs), &ca, sizeof ca);
  }
  WalkArgs args;
  args.calls = reinterpret_cast<const WalkCallArgs*>(at(callsAt));
  args.callCount = static_cast<uint32_t>(parts.size());
  args.channels = reinterpret_cast<const WalkChannel*>(at(channelsAt));
  args.status = reinterpret_cast<WalkStatus*>(at(program.statusOffset));
  args.abort = launch.abort;
  args.timeoutNs = launch.timeoutNs;
  args.channelCount = channels;
  args.elementSize = static_cast<uint32_t>(es);
  args.slotCount = geometry.slotCount;
  args.bulkSlotBytes = geometry.bulkSlotBytes;
  args.llSlotLines = geometry.llSlotLines;
  args.bulkSliceElements = static_cast<uint32_t>(sliceElementsFor(geometry, Protocol::Bulk, es));
  args.llSliceElements =
      static_cast<uint32_t>(sliceElementsFor(geometry, Protocol::LowLatency, es));
  args.nranks = launch.nranks;
  args.type = static_cast<uint8_t>(launch.type);
  args.systemScope = launch.systemScope ? 1 : 0;
  std::memcpy(bytes + argsAt, &args, sizeof args);
  return program;
}

}  // namespace loom::walk
