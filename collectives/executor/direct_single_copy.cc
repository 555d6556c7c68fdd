// Single-copy rounds of the direct algorithm. Instead of copying its message
// into its shared arena, each rank publishes the addresses of its own buffers
// and reads its peers' buffers where they are (plain pointers between
// threads, its own mapping of a peer's loomMemAlloc buffer, process_vm_readv
// between processes: transports/shm/peer_memory.h).
//
// An all-reduce then moves each byte about twice per rank instead of five
// times: each rank reduces its shard straight from every rank's input (a
// block at a time through L2-sized scratch), publishes it, and copies the
// other shards straight from their owners' outputs into its own. Two ranks
// out of place that read each other in place may each sum the whole message
// instead, streaming it into their own outputs: three bytes of traffic per
// byte, none of them a line the peer has just written. Rank 0 times both and
// the faster is kept (two_rank_sum.h).
//
// A round has up to three publications, each waited for by every rank:
//   inputSeq    the buffers are exposed (their addresses are in the header);
//   outputSeq   this rank's shard of the output is final (all-reduce only);
//   releasedSeq this rank read its last byte of any peer's buffers.
// Nobody writes a region of a buffer while a peer may still read it: in-place
// all-reduce writes other ranks' shards only after every rank published its
// own shard, which it does only after reading every input it needs. The call
// returns only after every rank released, so the caller may reuse its buffers.
//
// A rank that leaves a round early (an error, an abort) cannot wait for the
// releases, so it withdraws instead: it marks its buffers withdrawn and waits
// until no thread rank is reading them by pointer. Readers count themselves in
// around each read and stop at a withdrawn peer; reads by process_vm_readv
// need neither (a freed buffer in another process cannot crash the reader).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "collectives/algorithms.h"
#include "collectives/executor/direct_executor.h"
#include "collectives/executor/streamed_reduce.h"
#include "core/log.h"
#include "core/race_annotations.h"

namespace loom {

namespace {

/// Rank r's shard of a single-copy all-reduce: about count/n elements, with
/// boundaries on 64-byte multiples where the count allows. The kernel's copy
/// runs at half speed into a destination that is not so aligned (measured
/// on this project's 2-core VM: 3.0 against 6.3 GB/s).
struct Shard {
  size_t offset = 0;
  size_t count = 0;
};

Shard shardOf(size_t count, int nranks, int r, size_t es) {
  const size_t step = es < 64 ? 64 / es : 1;
  const auto boundary = [&](int k) {
    const size_t plain = chunkOffset(count, nranks, k);
    return std::min(count, (plain + step - 1) / step * step);
  };
  const size_t from = boundary(r);
  const size_t to = r + 1 == nranks ? count : boundary(r + 1);
  return {from, to - from};
}

}  // namespace

/// The address of rank r's segment header in rank r's process, which is also
/// this process for a Pointer peer: the one address every thread rank knows.
const void* DirectExecutor::ownerToken(int r) const {
  return reinterpret_cast<const void*>(arenas_[r].header->ownerAddress);
}

void DirectExecutor::announcePublished() const { announceRelease(ownerToken(rank_)); }

void DirectExecutor::announceSeen() const {
  for (int r = 0; r < nranks_; ++r) {
    if (r != rank_ && options_.peers->access(r) == PeerAccess::Pointer) {
      announceAcquire(ownerToken(r));
    }
  }
}

bool DirectExecutor::singleCopySized(size_t bytes) const {
  return options_.peers != nullptr && bytes > 0 && bytes >= options_.singleCopyMinBytes;
}

bool DirectExecutor::singleCopy(size_t bytes, bool learnsInArena) {
  if (!singleCopySized(bytes)) return false;
  if (options_.peersReadable) return true;
  SharedBuffersState& state = *options_.sharedBuffers;
  if (state.shared) return true;
  if (learnsInArena || ++state.untried < kSharedRetryCalls) return false;
  state.untried = 0;
  return true;
}

uint64_t exposureCall(uint64_t call) {
  constexpr uint64_t kTag = 0x5349474e4c434f50ULL;  // "SINGLCOP"
  const uint64_t tagged = call ^ kTag;
  return tagged != 0 ? tagged : kTag;  // fingerprints are never 0
}

std::optional<bool> DirectExecutor::sharingOffer(size_t bytes, bool offered) const {
  if (!singleCopySized(bytes) || options_.peersReadable) return std::nullopt;
  return offered;
}

void DirectExecutor::learnSharedBuffers(int parity) {
  // Read right after the round's inputs are seen: a peer rewrites this
  // parity's offer only two rounds on, after this rank published the next.
  bool shared = true;
  for (int r = 0; r < nranks_ && shared; ++r) {
    shared = options_.peers->everyRankInProcessOf(r) || arenas_[r].header->sharedOffer[parity] != 0;
  }
  options_.sharedBuffers->shared = shared;
}

bool DirectExecutor::exposeBuffers(const Exposure& exposure) {
  beginRound();
  // Tagged: were the ranks ever to disagree on taking single-copy, a peer's
  // arena round for the same call then fails as a mismatch instead of being
  // read as this round.
  roundCall_ = exposureCall(options_.call);
  SegmentHeader& mine = *arenas_[rank_].header;
  mine.exposedInput = reinterpret_cast<uint64_t>(exposure.in);
  mine.exposedOutput = reinterpret_cast<uint64_t>(exposure.out);
  mine.exposedInputFile = exposure.inFile;
  mine.exposedOutputFile = exposure.outFile;
  const bool sumDecision = exposure.allReduce && nranks_ == 2 && options_.twoRankSum != nullptr;
  if (sumDecision) publishDecision(*options_.twoRankSum, kTwoRankSumSlot);
  announcePublished();
  publishInput();  // releases the addresses and the decision with the round number
  waitAllInputs();
  if (sumDecision) adoptDecision(*options_.twoRankSum, kTwoRankSumSlot);
  roundCall_ = options_.call;
  announceSeen();
  if (!options_.peersReadable) {
    for (int r = 0; r < nranks_; ++r) {
      if (!readableInPlace(r, false) ||
          (exposure.allReduce &&
           (!readableInPlace(r, true) || !exposedOutOfPlace(r, exposure.inBytes)))) {
        // Every rank finds the same from the same headers: all take the
        // arena, and stop trying until an arena round sees shared buffers.
        options_.sharedBuffers->shared = false;
        return false;
      }
    }
  }
  if (!options_.peersReadable) options_.sharedBuffers->shared = true;
  // Only here: no address mapShared gave out is in use between rounds.
  options_.peers->dropFreedMappings();
  peerInput_.assign(static_cast<size_t>(nranks_), nullptr);
  peerOutput_.assign(static_cast<size_t>(nranks_), nullptr);
  for (int r = 0; r < nranks_; ++r) {
    peerInput_[static_cast<size_t>(r)] = localView(r, false, exposure.inBytes);
    if (exposure.allReduce) {
      peerOutput_[static_cast<size_t>(r)] = localView(r, true, exposure.outBytes);
    }
  }
  return true;
}

bool DirectExecutor::exposedOutOfPlace(int r, size_t bytes) const {
  const SegmentHeader& h = *arenas_[r].header;
  return !overlaps(reinterpret_cast<const char*>(h.exposedInput),
                   reinterpret_cast<const char*>(h.exposedOutput), bytes);
}

bool DirectExecutor::readableInPlace(int r, bool output) const {
  const SegmentHeader& h = *arenas_[r].header;
  return (output ? h.exposedOutputFile : h.exposedInputFile).valid() ||
         options_.peers->everyRankInProcessOf(r);
}

const char* DirectExecutor::localView(int r, bool output, size_t bytes) const {
  const SegmentHeader& h = *arenas_[r].header;
  if (options_.peers->access(r) == PeerAccess::Pointer) {
    return reinterpret_cast<const char*>(output ? h.exposedOutput : h.exposedInput);
  }
  const SharedFileRef& file = output ? h.exposedOutputFile : h.exposedInputFile;
  return file.valid() ? options_.peers->mapShared(r, file, bytes) : nullptr;
}

void DirectExecutor::releaseBuffers() {
  // A peer whose process exited may have left its process id to another
  // process: what this round read from it cannot be trusted.
  for (int r = 0; r < nranks_; ++r) {
    if (r != rank_) options_.peers->checkAlive(r);
  }
  announcePublished();
  arenas_[rank_].header->releasedSeq.store(round_, std::memory_order_release);
  ringPeers();
  waitAll(&SegmentHeader::releasedSeq, "release of the buffers it exposed");
  announceSeen();
}

// Also right when the round failed before its buffers were exposed (a
// timeout in beginRound): nobody reads them then, and the peers learn at once
// that this rank is out of the round.
void DirectExecutor::withdrawBuffers() noexcept {
  SegmentHeader& mine = *arenas_[rank_].header;
  // Sequentially consistent with the readers' count-then-check, so either a
  // reader sees the withdrawal or this rank sees the reader.
  mine.withdrawnSeq.store(round_, std::memory_order_seq_cst);
  ringPeers();
  // A reader holds the count only while copying or reducing (never while it
  // waits), so this ends within one shard's copy; the bound is a safeguard.
  const auto deadline = std::chrono::steady_clock::now() + waiter_.timeout();
  while (mine.pointerReaders.load(std::memory_order_seq_cst) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      LOOM_WARN("rank {}: left direct round {} while a peer still read its buffers", rank_, round_);
      return;
    }
    std::this_thread::yield();
  }
}

/// Counts this rank in as a reader of its pointer peers' buffers (of `only`,
/// if not -1) for the scope.
class DirectExecutor::PointerReads {
 public:
  PointerReads(const DirectExecutor& executor, int only) : executor_(executor), only_(only) {
    executor_.beginPointerReads(only_);
  }
  ~PointerReads() { executor_.endPointerReads(only_); }
  PointerReads(const PointerReads&) = delete;
  PointerReads& operator=(const PointerReads&) = delete;

 private:
  const DirectExecutor& executor_;
  int only_;
};

bool DirectExecutor::readsByPointer(int r, int only) const {
  return r != rank_ && (only < 0 || r == only) && options_.peers->access(r) == PeerAccess::Pointer;
}

void DirectExecutor::beginPointerReads(int only) const {
  for (int r = 0; r < nranks_; ++r) {
    if (readsByPointer(r, only)) {
      arenas_[r].header->pointerReaders.fetch_add(1, std::memory_order_seq_cst);
    }
  }
  for (int r = 0; r < nranks_; ++r) {
    if (readsByPointer(r, only) &&
        arenas_[r].header->withdrawnSeq.load(std::memory_order_seq_cst) >= round_) {
      endPointerReads(only);
      throw LeftRound(r, round_);
    }
  }
}

void DirectExecutor::endPointerReads(int only) const noexcept {
  for (int r = 0; r < nranks_; ++r) {
    if (readsByPointer(r, only)) {
      arenas_[r].header->pointerReaders.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
}

void DirectExecutor::readPeer(int r, bool output, size_t offset, char* to, size_t bytes) const {
  if (const char* local = (output ? peerOutput_ : peerInput_)[static_cast<size_t>(r)]) {
    const PointerReads reading(*this, r);
    std::memcpy(to, local + offset, bytes);
    return;
  }
  const SegmentHeader& h = *arenas_[r].header;
  options_.peers->read(r, (output ? h.exposedOutput : h.exposedInput) + offset, to, bytes);
}

const char* DirectExecutor::peerView(int r, bool output, size_t offset, size_t bytes, char* scratch,
                                     const char* mine) const {
  if (r == rank_) return mine;
  if (const char* local = (output ? peerOutput_ : peerInput_)[static_cast<size_t>(r)]) {
    return local + offset;
  }
  const SegmentHeader& h = *arenas_[r].header;
  return options_.peers->view(r, (output ? h.exposedOutput : h.exposedInput) + offset, bytes,
                              scratch);
}

void DirectExecutor::reduceExposed(char* to, const char* mine, size_t from, size_t count, size_t es,
                                   const ReduceContext& rc) {
  // The sum builds in `acc` and is copied out last: `to` may be this rank's
  // own input (in place), which is still to be read for later ranks.
  char* acc = options_.scratch.data();
  char* peer = acc + kSingleCopyBlockBytes;
  const size_t perBlock = kSingleCopyBlockBytes / es;
  const PointerReads reading(*this, -1);
  for (size_t done = 0; done < count; done += perBlock) {
    const size_t n = std::min(perBlock, count - done);
    const size_t bytes = n * es;
    const size_t at = (from + done) * es;
    const char* own = mine + done * es;
    const char* first = peerView(0, false, at, bytes, acc, own);
    rc.reduce(acc, first, peerView(1, false, at, bytes, peer, own), n);
    for (int r = 2; r < nranks_; ++r) {
      rc.reduce(acc, acc, peerView(r, false, at, bytes, peer, own), n);
    }
    if (rc.finalize != nullptr) rc.finalize(acc, n, rc.nranks);
    std::memcpy(to + done * es, acc, bytes);
  }
}

bool DirectExecutor::mayChooseWholeSum(size_t bytes) const {
  if (nranks_ != 2 || options_.twoRankSum == nullptr) return false;
  for (int r = 0; r < nranks_; ++r) {
    if (!readableInPlace(r, false) || !exposedOutOfPlace(r, bytes)) return false;
  }
  return true;
}

void DirectExecutor::sumWholeMessage(const char* in, char* out, size_t count, size_t es,
                                     const ReduceContext& rc) {
  const PointerReads reading(*this, -1);
  const char* const inputs[2] = {rank_ == 0 ? in : peerInput_[0], rank_ == 1 ? in : peerInput_[1]};
  reduceStreamed(out, count, es, [&](char* block, size_t first, size_t n) {
    rc.reduce(block, inputs[0] + first * es, inputs[1] + first * es, n);
    if (rc.finalize != nullptr) rc.finalize(block, n, rc.nranks);
  });
  bytesSent_ += count * es;
}

void DirectExecutor::sumByShards(const char* in, char* out, size_t count, size_t es,
                                 const ReduceContext& rc) {
  const Shard mine = shardOf(count, nranks_, rank_, es);
  reduceExposed(out + mine.offset * es, in + mine.offset * es, mine.offset, mine.count, es, rc);
  bytesSent_ += (count + mine.count) * es;
  announcePublished();
  publishOutput();
  waitAllOutputs();
  announceSeen();
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    const Shard theirs = shardOf(count, nranks_, r, es);
    readPeer(r, true, theirs.offset * es, out + theirs.offset * es, theirs.count * es);
  }
}

bool DirectExecutor::singleCopyAllReduce(const char* in, char* out, size_t count, size_t es,
                                         const ReduceContext& rc) {
  const size_t bytes = count * es;
  if (!exposeBuffers({in, bytes, options_.inputFile, out, bytes, options_.outputFile, true})) {
    return false;
  }
  const bool choosing = mayChooseWholeSum(bytes);
  // From here: the ways differ only in what follows, while the exposure's
  // wait for the last rank to arrive would add its skew to either.
  const TimedRound clock =
      choosing ? startTimedRound(*options_.twoRankSum, bytes, rank_ == 0) : TimedRound{};
  const bool whole = choosing && options_.twoRankSum->takesSecond(bytes);
  if (whole) {
    sumWholeMessage(in, out, count, es, rc);
  } else {
    sumByShards(in, out, count, es, rc);
  }
  releaseBuffers();
  if (choosing) finishTimedRound(clock, *options_.twoRankSum, whole, kTwoRankSumNames);
  return true;
}

bool DirectExecutor::singleCopyAllGather(const char* in, char* out, size_t count, size_t es) {
  const size_t bytes = count * es;
  if (!exposeBuffers({in, bytes, options_.inputFile, out, 0, {}, false})) return false;
  for (int r = 0; r < nranks_; ++r) {
    char* slot = out + static_cast<size_t>(r) * bytes;
    if (r != rank_) {
      readPeer(r, false, 0, slot, bytes);
    } else if (slot != in) {
      std::memcpy(slot, in, bytes);
    }
  }
  bytesSent_ += bytes;
  releaseBuffers();
  return true;
}

bool DirectExecutor::singleCopyReduceScatter(const char* in, char* out, size_t recvCount, size_t es,
                                             const ReduceContext& rc) {
  const size_t inBytes = static_cast<size_t>(nranks_) * recvCount * es;
  if (!exposeBuffers({in, inBytes, options_.inputFile, out, 0, {}, false})) return false;
  const size_t from = static_cast<size_t>(rank_) * recvCount;
  reduceExposed(out, in + from * es, from, recvCount, es, rc);
  bytesSent_ += static_cast<uint64_t>(nranks_ - 1) * recvCount * es;
  releaseBuffers();
  return true;
}

bool DirectExecutor::singleCopyBroadcast(char* out, size_t count, size_t es, int root) {
  // The root's output already holds the message (broadcast copied it there).
  if (!exposeBuffers({out, count * es, options_.outputFile, out, 0, {}, false})) return false;
  if (rank_ != root) {
    readPeer(root, false, 0, out, count * es);
  } else {
    bytesSent_ += count * es;
  }
  releaseBuffers();
  return true;
}

bool DirectExecutor::singleCopyReduce(const char* in, char* out, size_t count, size_t es,
                                      const ReduceContext& rc, int root) {
  if (!exposeBuffers({in, count * es, options_.inputFile, out, 0, {}, false})) return false;
  if (rank_ == root) {
    reduceExposed(out, in, 0, count, es, rc);
  } else {
    bytesSent_ += count * es;
  }
  releaseBuffers();
  return true;
}

}  // namespace loom
