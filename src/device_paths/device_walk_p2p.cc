// Send/recv groups on the plan-walking kernel. Only the two ends of each pair
// take part in a send/recv, so nothing here asks the whole communicator: the
// ends of every pair trade a small offer over their link and both decide the
// same way from the two offers. Pairs that can walk become one walk of this
// rank's sends, then its receives (bytes; each call takes the protocol its
// size picks, as both of its ends know the size; the k-th send to a peer meets
// that peer's k-th receive, as on the host path), launched before
// the other pairs are staged, so that a stream wait on the staged side never
// waits for a walk that was not launched yet.
//
// Why sends first, and fewer calls per peer and direction than FIFO slots: a
// channel's team walks its steps in order and each wait blocks, so a receive
// placed before a send could wait for a peer that waits for it. With every
// send of an iteration before every receive, and at most one FIFO's worth of
// messages per connection per iteration, a blocked send waits for a receiver
// that is a whole iteration behind, and a blocked receive for a sender behind
// it in the same iteration: the waits never close a circle.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>

#include "core/log.h"
#include "device/device_scope.h"
#include "device_paths/device_walk_parts.h"
#include "device_paths/exchange_values.h"

namespace loom {
namespace {

/// What a rank tells one peer before a send/recv group: whether its calls
/// with that peer can walk, where, and what they move, so that a pair with
/// mismatched calls is left to the host path (which reports the mismatch).
struct PairOffer {
  int32_t usable = 0;
  int32_t device = -1;
  int32_t failed = 0;    ///< this rank's kernel path failed earlier
  int32_t reserved = 0;  ///< no padding bytes on the wire
  uint64_t stream = 0;
  uint64_t sends = 0;      ///< calls sending to the peer
  uint64_t sendSizes = 0;  ///< a hash of their byte counts, in call order
  uint64_t recvs = 0;      ///< calls receiving from the peer
  uint64_t recvSizes = 0;
};

bool isSend(const Operation& op) { return op.collective == Collective::Send; }

uint64_t bytesOf(const Operation& op) { return op.count * dataTypeSize(op.type); }

/// FNV-1a over the byte counts in call order: equal on both ends exactly
/// when every send meets a receive of its size.
uint64_t addSize(uint64_t hash, uint64_t bytes) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  for (int shift = 0; shift < 64; shift += 8) hash = (hash ^ ((bytes >> shift) & 0xff)) * kPrime;
  return hash;
}

/// This rank's offer to `peer`: whether its calls with the peer can walk on
/// `device` (the walker state's) and the group's stream, and their sizes.
PairOffer offerTo(int peer, std::span<const Operation> ops, int device, void* stream, bool failed) {
  constexpr uint64_t kEmptyHash = 0xcbf29ce484222325ull;
  PairOffer offer;
  offer.usable = failed ? 0 : 1;
  offer.failed = failed ? 1 : 0;
  offer.device = device;
  offer.stream = reinterpret_cast<uintptr_t>(stream);
  offer.sendSizes = kEmptyHash;
  offer.recvSizes = kEmptyHash;
  for (const Operation& op : ops) {
    if (op.root != peer) continue;
    if (!op.onDevice || op.stream != stream || deviceOf(op) != device) offer.usable = 0;
    (isSend(op) ? offer.sends : offer.recvs) += 1;
    uint64_t& sizes = isSend(op) ? offer.sendSizes : offer.recvSizes;
    sizes = addSize(sizes, bytesOf(op));
  }
  return offer;
}

/// Both ends decide alike: each can walk, every call meets one of its size,
/// each direction holds fewer calls than a FIFO has slots (see the top of the
/// file), and two ranks of one process would not make each other's kernels wait.
bool pairWalks(const Comm& comm, int peer, const PairOffer& mine, const PairOffer& theirs,
               uint32_t slots) {
  if (mine.usable == 0 || theirs.usable == 0) return false;
  if (mine.sends != theirs.recvs || mine.sendSizes != theirs.recvSizes ||
      mine.recvs != theirs.sends || mine.recvSizes != theirs.sendSizes) {
    return false;
  }
  if (mine.sends >= slots || mine.recvs >= slots) return false;
  return !sameProcess(comm, comm.rank, peer) ||
         streamConflict(mine.device, mine.stream, theirs.device, theirs.stream) == nullptr;
}

/// One step per call, in bytes, addressed from the lowest send and receive
/// buffer (the walk has one input and one output base). Empty calls move
/// nothing and may have no buffer: both ends leave them out.
RankPlan planOf(std::span<const Operation* const> walked, const char** input, char** output) {
  std::vector<const Operation*> sendsFirst;
  std::copy_if(walked.begin(), walked.end(), std::back_inserter(sendsFirst),
               [](const Operation* op) { return bytesOf(*op) > 0; });
  std::stable_partition(sendsFirst.begin(), sendsFirst.end(),
                        [](const Operation* op) { return isSend(*op); });
  *input = nullptr;
  *output = nullptr;
  for (const Operation* op : sendsFirst) {
    if (isSend(*op)) {
      const auto* at = static_cast<const char*>(op->send);
      *input = *input == nullptr ? at : std::min(*input, at);
    } else {
      auto* at = static_cast<char*>(op->recv);
      *output = *output == nullptr ? at : std::min(*output, at);
    }
  }
  RankPlan plan;
  plan.streams.emplace_back();
  for (const Operation* op : sendsFirst) {
    Step step;
    step.count = bytesOf(*op);
    if (isSend(*op)) {
      step.kind = StepKind::Send;
      step.sendPeer = op->root;
      step.src = {BufferId::Input,
                  static_cast<size_t>(static_cast<const char*>(op->send) - *input)};
    } else {
      step.kind = StepKind::Recv;
      step.recvPeer = op->root;
      step.dst = {BufferId::Output, static_cast<size_t>(static_cast<char*>(op->recv) - *output)};
    }
    plan.streams.back().push_back(step);
  }
  return plan;
}

}  // namespace

PointToPointWalk agreePointToPoint(Comm& comm, std::span<const Operation> ops) {
  PointToPointWalk walk;
  DeviceWalkOutcome& outcome = walk.outcome;
  // The walker state is made at a collective that every rank agreed on, so
  // both ends of every pair have one, or neither has.
  DeviceWalkState* state = comm.deviceWalk.get();
  // Crowding is decided from what every rank told at the state's creation,
  // so both ends of a pair see it alike.
  if (state == nullptr || !canWalkHere() || !state->crowded.empty()) return walk;
  std::vector<int> peers;
  for (const Operation& op : ops) {
    if (op.root != comm.rank && std::find(peers.begin(), peers.end(), op.root) == peers.end()) {
      peers.push_back(op.root);
    }
  }
  if (peers.empty()) return walk;  // only transfers to itself: the host path copies them
  walk.stream = ops.front().stream;
  // Read once: what the offers say and what this rank reports must agree.
  const std::string failure = finishedWalkFailure(*state);
  std::vector<PairOffer> mine;
  mine.reserve(peers.size());
  for (int peer : peers) {
    mine.push_back(offerTo(peer, ops, state->device, walk.stream, !failure.empty()));
  }
  const std::vector<PairOffer> theirs =
      exchangeWithPeers(comm, peers, std::span<const PairOffer>(mine));

  // Pairs with a failed end move nothing at either end (staging them would
  // meet a peer that is not there); the others walk or are staged as agreed.
  outcome.handled = true;
  std::vector<int> skipped;
  for (const Operation& op : ops) {
    const auto at = std::find(peers.begin(), peers.end(), op.root);
    const size_t i = static_cast<size_t>(at - peers.begin());
    if (at != peers.end() && (mine[i].failed != 0 || theirs[i].failed != 0)) {
      if (std::find(skipped.begin(), skipped.end(), op.root) == skipped.end()) {
        skipped.push_back(op.root);
      }
    } else if (at != peers.end() &&
               pairWalks(comm, op.root, mine[i], theirs[i], state->geometry.slotCount)) {
      walk.walked.push_back(&op);
    } else {
      outcome.rest.push_back(op);
    }
  }
  if (!failure.empty()) {
    outcome.failure = fmt::format("rank {}: {}", comm.rank, failure);
  } else if (!skipped.empty()) {
    outcome.failure = fmt::format(
        "rank {}: send/recv with rank(s) {} not run: their device collectives failed earlier",
        comm.rank, fmt::join(skipped, ", "));
  }
  return walk;
}

void launchPointToPoint(Comm& comm, PointToPointWalk& walk) {
  if (walk.walked.empty()) return;
  DeviceWalkState& state = *comm.deviceWalk;
  const device::DeviceScope scope(state.device);
  walk::WalkLaunch launch;
  launch.type = DataType::Uint8;
  walk::WalkPart part;
  // Each call's size picks its protocol, which both ends of it know.
  part.protocolPerStep = true;
  const RankPlan plan = planOf(walk.walked, &part.input, &part.output);
  part.plan = &plan;
  launchWalk(comm, state, {&part, 1}, launch, walk.stream);
  walk.outcome.walked = true;
  if (!state.announcedPointToPoint) {
    state.announcedPointToPoint = true;
    LOOM_INFO("rank {}: send/recv groups walk on the device (first: {} calls)", comm.rank,
              walk.walked.size());
  }
}

DeviceWalkOutcome walkPointToPoint(Comm& comm, std::span<const Operation> ops) {
  PointToPointWalk walk = agreePointToPoint(comm, ops);
  launchPointToPoint(comm, walk);
  if (walk.outcome.walked) CommStats::add(comm.stats.calls, 1);
  return std::move(walk.outcome);
}

}  // namespace loom
