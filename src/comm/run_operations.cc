#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

#include "collectives/executor/direct_executor.h"
#include "collectives/executor/step_executor.h"
#include "comm/operation.h"
#include "core/log.h"
#include "device_paths/device_direct.h"
#include "device_paths/device_staging.h"
#include "device_paths/device_walk.h"

namespace loom {
namespace {

ReduceContext reduceContext(const Comm& comm, const Operation& op) {
  ReduceContext rc;
  rc.nranks = comm.nranks;
  if (isReduction(op.collective)) {
    rc.reduce = reducerFor(op.type, op.op);
    rc.finalize = finalizerFor(op.type, op.op);
  }
  return rc;
}

/// LOOM_CHECK=1: every rank compares what it is about to call with every other rank.
void checkAgreement(Comm& comm, const Operation& op) {
  const std::string mine = fmt::format(
      "{} count={} type={} op={} root={}", toString(op.collective), op.count, dataTypeName(op.type),
      isReduction(op.collective) ? reduceOpName(op.op) : "-", op.root);
  const auto all = comm.bootstrap->allGather(mine, Deadline::after(comm.config.timeout));
  for (int r = 0; r < comm.nranks; ++r) {
    if (all[r] != all[0]) {
      raise(ErrorCode::InvalidUsage,
            "LOOM_CHECK: collective #{} differs across ranks: rank {} called '{}' but rank 0 "
            "called '{}'",
            comm.collectiveCount, r, all[r], all[0]);
    }
  }
}

size_t messageBytes(const Comm& comm, const Operation& op) {
  const size_t es = dataTypeSize(op.type);
  switch (op.collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return op.count * es * static_cast<size_t>(comm.nranks);
    default:
      return op.count * es;
  }
}

/// Adds what an executor sent to the comm's counters, even when it threw.
template <typename Executor>
struct CountSent {
  Comm& comm;
  const Executor& executor;
  ~CountSent() { comm.stats.addSent(executor.bytesSent()); }
};

void runDirectRounds(DirectExecutor& direct, const Operation& op, const ReduceContext& rc);

/// Ranks in different calls: fails this one naming both, and marks the
/// failure so that local peers still waiting in this call fail at once too.
[[noreturn]] void raiseCallMismatch(Comm& comm, const Operation& op, uint64_t sequence, int peer) {
  comm.callMismatched = true;
  const std::string error = fmt::format(
      "rank {} called #{}: {}, but rank {} {}: every rank must make the same collective calls "
      "in the same order (LOOM_CHECK=1 compares each call before it runs)",
      comm.rank, sequence, describeCallShape(op.collective, op.count, op.type, op.op, op.root),
      peer, describeLocalCall(comm, peer));
  revokeOnMismatch(comm, error);
  throw Error(ErrorCode::InvalidUsage, error);
}

/// Where the op's buffers lie in registered loomMemAlloc allocations, for
/// peers in other processes to map (only for messages that run single-copy).
void findSharedFiles(Comm& comm, const Operation& op, DirectOptions& options) {
  const size_t es = dataTypeSize(op.type);
  // What one rank contributes, as DirectExecutor::singleCopy judges it.
  if (op.count * es < comm.config.singleCopyMinBytes) return;
  const auto n = static_cast<size_t>(comm.nranks);
  const size_t in = op.count * es * (op.collective == Collective::ReduceScatter ? n : 1);
  const size_t out = op.count * es * (op.collective == Collective::AllGather ? n : 1);
  options.inputFile = comm.registry.find(op.send, in);
  options.outputFile = comm.registry.find(op.recv, out);
}

void runDirect(Comm& comm, const Operation& op, uint64_t sequence, Waiter& waiter) {
  DirectOptions options;
  options.call = callFingerprint(op.collective, op.count, op.type, op.op, op.root);
  options.oneShotBytes = comm.config.directOneShotBytes;
  options.nonTemporalMinBytes = comm.config.nonTemporalMinBytes;
  options.arenaStores = &comm.arenaStores[static_cast<size_t>(directSlot(op.collective))];
  options.arenaStoreSlot = arenaStoreSlot(op.collective);
  if (op.collective == Collective::AllReduce) options.twoRankSum = &comm.twoRankSum;
  if (comm.peerMemory != nullptr) {
    options.peers = comm.peerMemory.get();
    options.singleCopyMinBytes = comm.config.singleCopyMinBytes;
    options.scratch = comm.singleCopyScratch.span();
    options.peersReadable = comm.peersReadable;
    options.sharedBuffers = &comm.sharedBuffers[static_cast<size_t>(directSlot(op.collective))];
    if (comm.mapsSharedBuffers && !comm.registry.empty()) findSharedFiles(comm, op, options);
  }
  DirectExecutor direct(comm.arenas, comm.rank, comm.shm->arenaBytes(), comm.directRound, waiter,
                        options);
  const CountSent<DirectExecutor> count{comm, direct};
  try {
    runDirectRounds(direct, op, reduceContext(comm, op));
  } catch (const CallMismatch& mismatch) {
    raiseCallMismatch(comm, op, sequence, mismatch.peer());
  }
}

void runDirectRounds(DirectExecutor& direct, const Operation& op, const ReduceContext& rc) {
  const auto* in = static_cast<const char*>(op.send);
  auto* out = static_cast<char*>(op.recv);
  const size_t es = dataTypeSize(op.type);
  switch (op.collective) {
    case Collective::AllReduce:
      direct.allReduce(in, out, op.count, es, rc);
      break;
    case Collective::AllGather:
      direct.allGather(in, out, op.count, es);
      break;
    case Collective::ReduceScatter:
      direct.reduceScatter(in, out, op.count, es, rc);
      break;
    case Collective::Broadcast:
      direct.broadcast(in, out, op.count, es, op.root);
      break;
    case Collective::Reduce:
      direct.reduce(in, out, op.count, es, rc, op.root);
      break;
    default:
      raise(ErrorCode::InternalError, "direct algorithm chosen for {}", toString(op.collective));
  }
}

// Runs `plans` one after the other on the op's buffers: one plan for most
// algorithms, three phases for the hierarchical and host-tree all-reduces.
// Each phase's messages on a link are all received within that phase, so
// phases never mix on a FIFO.
void runPlans(Comm& comm, const Operation& op, uint64_t sequence,
              std::span<const RankPlan* const> plans, size_t sliceBytes, Waiter& waiter) {
  StepExecutor executor(comm.channelLinks, sliceBytes, waiter);
  const CountSent<StepExecutor> count{comm, executor};
  // The low half of the call's fingerprint travels with every message.
  const auto stamp =
      static_cast<uint32_t>(callFingerprint(op.collective, op.count, op.type, op.op, op.root) | 1);
  std::vector<char> scratch;
  for (const RankPlan* plan : plans) {
    scratch.resize(plan->scratchElements * dataTypeSize(op.type));
    PlanJob job;
    job.plan = plan;
    job.buffers = {static_cast<const char*>(op.send), static_cast<char*>(op.recv), scratch.data()};
    job.reduce = reduceContext(comm, op);
    job.elementSize = dataTypeSize(op.type);
    job.stamp = stamp;
    try {
      executor.run({&job, 1});
    } catch (const LinkStampMismatch& mismatch) {
      raiseCallMismatch(comm, op, sequence, mismatch.peer());
    }
  }
}

}  // namespace

void runCollective(Comm& comm, const Operation& op) {
  if (op.codec.kind != CodecKind::None) {
    runCompressed(comm, op);
    return;
  }
  if (comm.config.check) checkAgreement(comm, op);
  const uint64_t sequence = op.internal ? comm.collectiveCount : comm.collectiveCount++;
  const AlgorithmChoice choice = chooseAlgorithm(comm, op.collective, messageBytes(comm, op));
  const Algorithm algorithm = choice.algorithm;
  if (logLevel() >= LogLevel::Info &&
      comm.announcedChoices.insert({op.collective, algorithm, choice.channels}).second) {
    LOOM_INFO("rank {}: {} of {} B runs {} on {} channel(s) (first call with this choice)",
              comm.rank, toString(op.collective), messageBytes(comm, op), toString(algorithm),
              choice.channels);
  }
  OperationLabel label;
  label.collective = op.collective;
  label.algorithm = algorithm;
  label.sequence = sequence;
  label.count = op.count;
  label.type = op.type;
  Waiter waiter(comm.waitPolicy, label);
  if (algorithm == Algorithm::Direct) {
    runDirect(comm, op, sequence, waiter);
    return;
  }
  if (algorithm == Algorithm::Hierarchical || algorithm == Algorithm::HostTree) {
    const auto phases = comm.phasedPlan(algorithm, op.count, isInPlace(comm, op), choice.channels);
    std::vector<const RankPlan*> plans;
    for (const RankPlan& phase : *phases) plans.push_back(&phase);
    runPlans(comm, op, sequence, plans, choice.sliceBytes, waiter);
    return;
  }
  const auto plan = comm.plan(planRequestFor(comm, op, algorithm, choice.channels));
  const RankPlan* one = plan.get();
  runPlans(comm, op, sequence, {&one, 1}, choice.sliceBytes, waiter);
}

namespace {

/// Sends and receives to oneself pair up in call order and are plain copies.
void runSelfTransfers(const Comm& comm, std::span<const Operation* const> sends,
                      std::span<const Operation* const> recvs) {
  if (sends.size() != recvs.size()) {
    raise(ErrorCode::InvalidUsage,
          "rank {} posted {} sends to itself but {} receives from itself in one group", comm.rank,
          sends.size(), recvs.size());
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    const size_t sendBytes = sends[i]->count * dataTypeSize(sends[i]->type);
    const size_t recvBytes = recvs[i]->count * dataTypeSize(recvs[i]->type);
    if (sendBytes != recvBytes) {
      raise(ErrorCode::InvalidUsage, "rank {}: send to self of {} bytes met a receive of {} bytes",
            comm.rank, sendBytes, recvBytes);
    }
    if (sendBytes > 0) std::memmove(recvs[i]->recv, sends[i]->send, sendBytes);
  }
}

}  // namespace

/// Point-to-point operations run in waves: wave k holds the k-th operation
/// towards each (peer, direction), so both ends of every pair sit in the same
/// wave, waves never share a link direction, and a wave's jobs progress together.
void runPointToPoint(Comm& comm, std::span<const Operation* const> ops) {
  std::vector<const Operation*> selfSends;
  std::vector<const Operation*> selfRecvs;
  std::map<std::pair<int, bool>, std::deque<const Operation*>> queues;
  for (const Operation* op : ops) {
    const bool isSend = op->collective == Collective::Send;
    if (op->root == comm.rank) {
      (isSend ? selfSends : selfRecvs).push_back(op);
    } else {
      queues[{op->root, isSend}].push_back(op);
    }
  }
  runSelfTransfers(comm, selfSends, selfRecvs);
  while (!queues.empty()) {
    std::vector<std::shared_ptr<const RankPlan>> plans;
    std::vector<PlanJob> jobs;
    for (auto it = queues.begin(); it != queues.end();) {
      const Operation* op = it->second.front();
      it->second.pop_front();
      plans.push_back(comm.plan(planRequestFor(comm, *op, Algorithm::Pairwise)));
      PlanJob job;
      job.plan = plans.back().get();
      job.buffers = {static_cast<const char*>(op->send), static_cast<char*>(op->recv), nullptr};
      job.elementSize = dataTypeSize(op->type);
      jobs.push_back(job);
      it = it->second.empty() ? queues.erase(it) : std::next(it);
    }
    OperationLabel label;
    label.group = true;
    label.count = jobs.size();
    Waiter waiter(comm.waitPolicy, label);
    StepExecutor executor(comm.channelLinks, comm.config.sliceBytes(), waiter);
    const CountSent<StepExecutor> count{comm, executor};
    executor.run(jobs);
  }
}

namespace {

void recordCall(Comm& comm, std::span<const Operation> ops, uint64_t sent) {
  CommStats& s = comm.stats;
  for (const Operation& op : ops) {
    if (op.codec.kind != CodecKind::None) recordCompressedCall(comm, op);
  }
  s.lastCallBytesSent.store(sent, std::memory_order_relaxed);
  CommStats::add(s.calls, 1);
}

}  // namespace

namespace {

bool onDevice(const Operation& op) { return op.onDevice; }

/// The paths that need no device walk: direct, staged, host.
void runOffDevicePaths(Comm& comm, std::span<const Operation> ops) {
  if (ops.empty()) return;
  if (runDeviceDirect(comm, ops)) return;
  waitForStreamOrderedHostBuffers(ops);
  if (std::any_of(ops.begin(), ops.end(), onDevice)) {
    DeviceStaging staging(comm, ops);
    runHostOperations(comm, staging.hostOps());
    staging.finish();
    return;
  }
  runHostOperations(comm, ops);
}

/// Classifies `ops` by where their buffers live and runs them on that road.
void runClassified(Comm& comm, std::span<const Operation> ops) {
  // Every road uses the network links, which a proxy of earlier device walks
  // may still be using.
  quiesceDeviceWalkProxy(comm);
  // Classified once, by where the buffers live. A group on host buffers runs
  // on the host executor and meets no device decision (every rank of a call
  // passes the same kind of buffers: docs/cuda.md, "Decided once").
  if (std::none_of(ops.begin(), ops.end(), onDevice)) {
    waitForStreamOrderedHostBuffers(ops);
    runHostOperations(comm, ops);
    return;
  }
  DeviceWalkOutcome walked;
  try {
    walked = runDeviceWalk(comm, ops);
  } catch (const Error& e) {
    // A peer lost during the agreement is as lost as one lost in a transfer.
    if (e.code() == ErrorCode::RemoteError) {
      int expected = 0;
      comm.asyncError.compare_exchange_strong(expected, static_cast<int>(e.code()));
    }
    throw;
  }
  if (walked.handled) {
    // Send/recv pairs that could not walk, after those that did. The host
    // executor drives every network link, the proxy's too: let the proxy
    // finish first (the peers launched their walks before staging too).
    if (walked.walked && !walked.rest.empty()) quiesceDeviceWalkProxy(comm);
    runOffDevicePaths(comm, walked.rest);
    if (!walked.failure.empty()) {
      comm.asyncError.store(loomRemoteError);
      raise(ErrorCode::RemoteError, "{}", walked.failure);
    }
    return;
  }
  runOffDevicePaths(comm, ops);
}

}  // namespace

void runOperations(Comm& comm, std::span<const Operation> ops) {
  if (ops.empty()) return;
  try {
    runClassified(comm, ops);
  } catch (const Error& e) {
    if (comm.firstFailure.empty() &&
        (e.code() == ErrorCode::RemoteError || e.code() == ErrorCode::Revoked)) {
      comm.firstFailure = e.what();
    }
    throw;
  }
}

void runHostOperations(Comm& comm, std::span<const Operation> ops) {
  std::vector<const Operation*> pointToPoint;
  StatusScope status(comm, ops.front());
  const uint64_t sentBefore = comm.stats.bytesSent.load(std::memory_order_relaxed);
  try {
    for (const Operation& op : ops) {
      if (isPointToPoint(op)) {
        pointToPoint.push_back(&op);
      } else {
        runCollective(comm, op);
      }
    }
    if (!pointToPoint.empty()) runPointToPoint(comm, pointToPoint);
    recordCall(comm, ops, comm.stats.bytesSent.load(std::memory_order_relaxed) - sentBefore);
    status.succeeded();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::RemoteError) {
      int expected = 0;
      comm.asyncError.compare_exchange_strong(expected, static_cast<int>(e.code()));
      raiseFirstCause(comm, e);
    }
    throw;
  }
}

}  // namespace loom
