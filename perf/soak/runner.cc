#include "runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "types.h"

namespace soak {

namespace {

constexpr size_t kGuard = 64;         // canary bytes before and after every recv area
constexpr uint64_t kMaxOffset = 512;  // elements: buffers start at varied alignments
constexpr unsigned char kCanary = 0xA5;

bool reduces(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce ||
         c == Coll::GroupAllReduces;
}

}  // namespace

Runner::Runner(loomComm_t comm, int rank, int nranks, size_t maxBytes)
    : comm_(comm), rank_(rank), nranks_(nranks) {
  // One region holds a call's largest buffer (nranks blocks) plus offset and
  // guards; a group of up to 3 all-reduces uses 3 regions of one block each.
  const size_t slack = 2 * kGuard + kMaxOffset * 8;
  regionStride_ = maxBytes + slack;
  const size_t bytes =
      std::max(static_cast<size_t>(nranks) * maxBytes + slack, 3 * regionStride_) + slack;
  for (int t = 0; t < loomNumTypes; ++t) {
    for (int64_t v = kMinValue; v <= kMaxValue; ++v) {
      uint64_t bits = 0;
      encodeValue(static_cast<loomDataType_t>(t), v, &bits);
      tables_[t][static_cast<size_t>(v - kMinValue)] = bits;
    }
  }
  // Touch every page now, so that RSS after warm-up already includes them.
  send_.assign(bytes, 0);
  recv_.assign(bytes, 0);
}

ReductionInputs Runner::inputsOf(const Call& call) const {
  return ReductionInputs(call.type, call.op, nranks_, call.seed);
}

Runner::Slot Runner::prepare(const SoakOp& op, size_t j) {
  const Call& call = op.calls[j];
  const size_t es = loomTypeSize(call.type);
  const size_t c = call.count;
  const size_t n = static_cast<size_t>(nranks_);
  const size_t r = static_cast<size_t>(rank_);
  const size_t root = static_cast<size_t>(op.root);
  // Per-rank offsets: ranks pass buffers of different alignments.
  const uint64_t h = hash3(call.seed, r, 0x5eed);
  char* S = send_.data() + j * regionStride_ + kGuard + (h % kMaxOffset) * es;
  char* R = recv_.data() + j * regionStride_ + kGuard + ((h >> 20) % kMaxOffset) * es;

  Slot s;
  s.recv = R;
  s.area = R;
  s.areaBytes = c * es;
  const bool inPlace = call.inPlace;
  switch (op.coll) {
    case Coll::AllGather:
    case Coll::AllToAll:
    case Coll::Gather:
      s.areaBytes = n * c * es;
      break;
    case Coll::ReduceScatter:
      if (inPlace) s.areaBytes = n * c * es;
      break;
    case Coll::Scatter:
      if (inPlace && r == root) s.areaBytes = n * c * es;
      break;
    default:
      break;
  }
  std::memset(s.area - kGuard, kCanary, s.areaBytes + 2 * kGuard);

  const ReductionInputs in = inputsOf(call);
  char* src = inPlace ? R : S;
  switch (op.coll) {
    case Coll::AllReduce:
    case Coll::GroupAllReduces:
    case Coll::Reduce:
      fillReduction(in, src, 0, c);
      s.send = src;
      break;
    case Coll::ReduceScatter:
      fillReduction(in, src, 0, n * c);
      s.send = src;
      if (inPlace) s.recv = R + r * c * es;
      break;
    case Coll::AllGather:
      src = inPlace ? R + r * c * es : S;
      fillCopy(call, rank_, src, 0, c);
      s.send = src;
      break;
    case Coll::Broadcast:
      if (r == root) fillCopy(call, rank_, src, 0, c);
      s.send = src;  // ignored on other ranks, but in place means the same pointer
      break;
    case Coll::AllToAll:
      fillCopy(call, rank_, S, 0, n * c);
      s.send = S;
      break;
    case Coll::Gather:
      // Only the root has somewhere in place to put its block.
      src = inPlace && r == root ? R + r * c * es : S;
      fillCopy(call, rank_, src, 0, c);
      s.send = src;
      break;
    case Coll::Scatter:
      s.send = S;
      if (r == root) {
        src = inPlace ? R : S;
        fillCopy(call, rank_, src, 0, n * c);
        s.send = src;
        if (inPlace) s.recv = R + r * c * es;
      }
      break;
    case Coll::SendRecvRing:
      fillCopy(call, rank_, S, 0, c);
      s.send = S;
      break;
    case Coll::kCount:
      break;
  }
  // An out-of-place input must come back unchanged (Loom takes it as const).
  if (s.send == S && !(op.coll == Coll::Broadcast && r != root) &&
      !(op.coll == Coll::Scatter && r != root)) {
    const bool big =
        op.coll == Coll::ReduceScatter || op.coll == Coll::AllToAll || op.coll == Coll::Scatter;
    s.sendCheck = big ? n * c : c;
  }
  return s;
}

void Runner::issue(const SoakOp& op, const std::vector<Slot>& slots) {
  const Call& c0 = op.calls[0];
  const Slot& s0 = slots[0];
  const int root = op.root;
  switch (op.coll) {
    case Coll::AllReduce:
      return check(loomAllReduce(s0.send, s0.recv, c0.count, c0.type, c0.op, comm_, nullptr), op,
                   "loomAllReduce");
    case Coll::AllGather:
      return check(loomAllGather(s0.send, s0.recv, c0.count, c0.type, comm_, nullptr), op,
                   "loomAllGather");
    case Coll::ReduceScatter:
      return check(loomReduceScatter(s0.send, s0.recv, c0.count, c0.type, c0.op, comm_, nullptr),
                   op, "loomReduceScatter");
    case Coll::Broadcast:
      return check(loomBroadcast(s0.send, s0.recv, c0.count, c0.type, root, comm_, nullptr), op,
                   "loomBroadcast");
    case Coll::Reduce:
      return check(loomReduce(s0.send, s0.recv, c0.count, c0.type, c0.op, root, comm_, nullptr), op,
                   "loomReduce");
    case Coll::AllToAll:
      return check(loomAllToAll(s0.send, s0.recv, c0.count, c0.type, comm_, nullptr), op,
                   "loomAllToAll");
    case Coll::Gather:
      return check(loomGather(s0.send, s0.recv, c0.count, c0.type, root, comm_, nullptr), op,
                   "loomGather");
    case Coll::Scatter:
      return check(loomScatter(s0.send, s0.recv, c0.count, c0.type, root, comm_, nullptr), op,
                   "loomScatter");
    case Coll::SendRecvRing: {
      // op.root is the shift: every rank sends `shift` ranks ahead.
      const int to = (rank_ + root) % nranks_;
      const int from = (rank_ - root + nranks_) % nranks_;
      check(loomGroupStart(), op, "loomGroupStart");
      check(loomSend(s0.send, c0.count, c0.type, to, comm_, nullptr), op, "loomSend");
      check(loomRecv(s0.recv, c0.count, c0.type, from, comm_, nullptr), op, "loomRecv");
      return check(loomGroupEnd(), op, "loomGroupEnd");
    }
    case Coll::GroupAllReduces:
      check(loomGroupStart(), op, "loomGroupStart");
      for (size_t j = 0; j < op.calls.size(); ++j) {
        const Call& c = op.calls[j];
        check(loomAllReduce(slots[j].send, slots[j].recv, c.count, c.type, c.op, comm_, nullptr),
              op, "loomAllReduce");
      }
      return check(loomGroupEnd(), op, "loomGroupEnd");
    case Coll::kCount:
      return;
  }
}

void Runner::verify(const SoakOp& op, size_t j, const Slot& s) {
  const Call& call = op.calls[j];
  const size_t es = loomTypeSize(call.type);
  const size_t c = call.count;
  const int root = op.root;
  const ReductionInputs in = inputsOf(call);
  checkCanary(s.area - kGuard, kGuard, "guard before recvbuff");
  checkCanary(s.area + s.areaBytes, kGuard, "guard after recvbuff");
  switch (op.coll) {
    case Coll::AllReduce:
    case Coll::GroupAllReduces:
      checkReduction(in, s.recv, 0, c, "recvbuff");
      break;
    case Coll::ReduceScatter:
      checkReduction(in, s.recv, static_cast<uint64_t>(rank_) * c, c, "recvbuff");
      break;
    case Coll::Reduce:
      if (rank_ == root) {
        checkReduction(in, s.recv, 0, c, "recvbuff");
      } else if (call.inPlace) {
        checkOwnInput(in, s.recv, 0, c, "non-root in-place buffer");
      } else {
        checkCanary(s.recv, c * es, "non-root recvbuff (must stay untouched)");
      }
      break;
    case Coll::AllGather:
      for (int k = 0; k < nranks_; ++k) {
        checkCopy(call, k, s.recv + static_cast<size_t>(k) * c * es, 0, c, "recvbuff block");
      }
      break;
    case Coll::AllToAll:
      for (int k = 0; k < nranks_; ++k) {
        checkCopy(call, k, s.recv + static_cast<size_t>(k) * c * es,
                  static_cast<uint64_t>(rank_) * c, c, "recvbuff block");
      }
      break;
    case Coll::Gather:
      if (rank_ != root) {
        checkCanary(s.recv, s.areaBytes, "non-root recvbuff (must stay untouched)");
        break;
      }
      for (int k = 0; k < nranks_; ++k) {
        checkCopy(call, k, s.recv + static_cast<size_t>(k) * c * es, 0, c, "recvbuff block");
      }
      break;
    case Coll::Broadcast:
      checkCopy(call, root, s.recv, 0, c, "recvbuff");
      break;
    case Coll::Scatter:
      checkCopy(call, root, s.recv, static_cast<uint64_t>(rank_) * c, c, "recvbuff");
      break;
    case Coll::SendRecvRing:
      checkCopy(call, (rank_ - root + nranks_) % nranks_, s.recv, 0, c, "recvbuff");
      break;
    case Coll::kCount:
      break;
  }
  if (s.sendCheck > 0) {
    if (reduces(op.coll)) {
      checkOwnInput(in, s.send, s.sendFirst, s.sendCheck, "sendbuff (must stay unchanged)");
    } else {
      checkCopy(call, rank_, s.send, s.sendFirst, s.sendCheck, "sendbuff (must stay unchanged)");
    }
  }
}

void Runner::run(const SoakOp& op) {
  std::vector<Slot> slots;
  slots.reserve(op.calls.size());
  for (size_t j = 0; j < op.calls.size(); ++j) slots.push_back(prepare(op, j));
  issue(op, slots);
  if (op.index >= injectAt_ && rank_ == nranks_ - 1 && op.calls[0].count > 0) {
    slots[0].recv[0] ^= 0x40;
    injectAt_ = UINT64_MAX;
  }
  for (size_t j = 0; j < op.calls.size(); ++j) {
    verify(op, j, slots[j]);
    if (bad_.wrong > 0) {
      char why[512];
      std::snprintf(why, sizeof why,
                    "call %zu of the op: %zu wrong element(s); first %s = %.17g, expected %.17g", j,
                    bad_.wrong, bad_.where.c_str(), bad_.got, bad_.expected);
      fail(op, why);
    }
  }
}

void Runner::check(loomResult_t r, const SoakOp& op, const char* call) const {
  if (r == loomSuccess) return;
  fail(op,
       std::string(call) + " returned " + loomGetErrorString(r) + ": " + loomGetLastError(comm_));
}

void Runner::fail(const SoakOp& op, const std::string& why) const {
  std::string calls;
  for (const Call& c : op.calls) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s%s%s%s count %zu%s", calls.empty() ? "" : "; ",
                  typeName(c.type), reduces(op.coll) ? " " : "",
                  reduces(op.coll) ? opName(c.op) : "", c.count, c.inPlace ? " in-place" : "");
    calls += buf;
  }
  std::string where;
  if (op.coll == Coll::SendRecvRing) where = " shift " + std::to_string(op.root);
  if (op.coll == Coll::Broadcast || op.coll == Coll::Reduce || op.coll == Coll::Gather ||
      op.coll == Coll::Scatter) {
    where = " root " + std::to_string(op.root);
  }
  std::fprintf(stderr, "loom_soak: FAILED at op %llu on rank %d of %d: %s (%s)%s: %s\n",
               static_cast<unsigned long long>(op.index), rank_, nranks_, collName(op.coll),
               calls.c_str(), where.c_str(), why.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  // _Exit: other ranks' threads may be blocked inside Loom; running destructors
  // under them would turn a clear failure into a crash.
  std::_Exit(1);
}

}  // namespace soak
