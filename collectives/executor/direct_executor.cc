#include "collectives/executor/direct_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <type_traits>

#include "collectives/algorithms.h"
#include "collectives/executor/streamed_reduce.h"
#include "core/error.h"
#include "core/log.h"
#include "math/nontemporal_copy.h"

namespace loom {

uint64_t callFingerprint(Collective collective, size_t count, DataType type, ReduceOp op,
                         int root) {
  // The shape and the count each through an odd multiplier, a bijection: a
  // change in either always changes the fingerprint. The high half is folded
  // into the low (also a bijection), whose 32 bits stamp link messages, so
  // the root counts there too. Two parallel multiplies, where a full mixer
  // of both fields cost 5 % of an 8-byte all-reduce's host time.
  const uint64_t shape = static_cast<uint64_t>(collective) | static_cast<uint64_t>(type) << 8 |
                         static_cast<uint64_t>(op) << 16 |
                         static_cast<uint64_t>(static_cast<uint32_t>(root)) << 32;
  const uint64_t mixed = shape * 0x9e3779b97f4a7c15ULL ^ count * 0xbf58476d1ce4e5b9ULL;
  const uint64_t fingerprint = mixed ^ (mixed >> 32);
  return fingerprint == 0 ? 1 : fingerprint;
}

DirectExecutor::DirectExecutor(std::span<const ArenaView> arenas, int rank, size_t arenaBytes,
                               uint64_t& round, Waiter& waiter, const DirectOptions& options)
    : arenas_(arenas),
      rank_(rank),
      nranks_(static_cast<int>(arenas.size())),
      arenaBytes_(arenaBytes),
      round_(round),
      waiter_(waiter),
      options_(options),
      roundCall_(options.call) {}

namespace {

/// Polls before the waiter's loop, which reads the clock on every turn: a
/// peer on another core usually publishes within a few hundred nanoseconds.
/// None where ranks outnumber cores (the waiter does not spin then): the peer
/// being waited for may need this core, and the polls only delay the yield
/// (4 ranks on 2 cores, 8 B: 3.74 -> 2.82 us per all-reduce, best of six).
constexpr int kQuickPolls = 64;

template <typename Ready>
void waitFor(Waiter& waiter, Ready ready, int rank, uint64_t round, const char* what) {
  const int polls = waiter.spins() ? kQuickPolls : 0;
  for (int i = 0; i < polls; ++i) {
    if (ready()) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  while (true) {
    const uint32_t seen = waiter.snapshot();
    if (ready()) break;
    waiter.idle(seen, [&] {
      return fmt::format("rank {} to publish its {} for direct round {}", rank, what, round);
    });
  }
  waiter.madeProgress();
}

}  // namespace

template <typename Round>
bool DirectExecutor::runSingleCopy(Round round) {
  try {
    return round();
  } catch (...) {
    withdrawBuffers();
    throw;
  }
}

namespace {

/// The last round `view`'s rank published, by either the region path or the
/// small-slot path (a rank publishes each round on exactly one of them).
uint64_t publishedRound(const ArenaView& view) {
  const SegmentHeader& h = *view.header;
  return std::max({h.inputSeq.load(std::memory_order_acquire),
                   h.small[0].round.load(std::memory_order_acquire),
                   h.small[1].round.load(std::memory_order_acquire)});
}

/// One rank: the reduction of a single contribution is the contribution itself.
void reduceAlone(const char* in, char* out, size_t count, size_t es, const ReduceContext& rc) {
  if (in != out) std::memmove(out, in, count * es);
  if (rc.finalize != nullptr) rc.finalize(out, count, 1);
}

// Copies with stores that bypass the cache where `streaming`: a rank's
// writes into its arena where the store choice says so (arena_stores.h), and
// results. Results from LOOM_NONTEMPORAL_MIN (16 MiB) leave the arena so. With their input they
// outgrow L3, so the caller reads them from memory anyway, and a plain store would first read each
// line in. Two ranks, best of four or five alternated runs, bus bandwidth: all-reduce out of
// place 1.1-1.2x at 16 and 32 MiB, 1.0-1.1x at 64 MiB (at 8 MiB the runs disagreed, 0.93-1.16x);
// all-gather 1.1-1.4x and broadcast 1.1-1.3x from 16 to 64 MiB. Where the result overwrites an
// input whose lines were just read (an all-reduce in place) they sit in cache, and bypassing it
// cost 20 %.
void copyBytes(char* to, const char* from, size_t bytes, bool streaming) {
  if (streaming) {
    copyNonTemporal(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

}  // namespace

int DirectExecutor::beginRound() {
  ++round_;
  const uint64_t previous = round_ - 1;
  for (int r = 0; r < nranks_; ++r) {
    // Fast path: the small slot of the previous round is usually where the
    // peer published it, and that line is already in our cache.
    if (arenas_[r].header->small[previous & 1].round.load(std::memory_order_acquire) >= previous) {
      continue;
    }
    waitFor(
        waiter_, [&] { return publishedRound(arenas_[r]) >= previous; }, r, previous, "input");
  }
  return static_cast<int>(round_ & 1);
}

void DirectExecutor::ringPeers() {
  for (int r = 0; r < nranks_; ++r) {
    if (r != rank_) arenas_[r].header->doorbell.ring();
  }
}

void DirectExecutor::publishInput() {
  SegmentHeader& mine = *arenas_[rank_].header;
  mine.inputCall[round_ & 1] = roundCall_;
  mine.inputSeq.store(round_, std::memory_order_release);
  ringPeers();
}

void DirectExecutor::publishOutput() {
  arenas_[rank_].header->outputSeq.store(round_, std::memory_order_release);
  ringPeers();
}

bool DirectExecutor::publishedInput(int r) const {
  const SegmentHeader& peer = *arenas_[r].header;
  const int p = static_cast<int>(round_ & 1);
  if (peer.inputSeq.load(std::memory_order_acquire) >= round_) {
    checkSameCall(r, peer.inputCall[p]);
    return true;
  }
  // A peer that published this round through its small slot is in another call.
  if (peer.small[p].round.load(std::memory_order_acquire) >= round_) throw CallMismatch(r);
  return false;
}

void DirectExecutor::waitInput(int r) {
  waitFor(
      waiter_, [&] { return publishedInput(r); }, r, round_, "input");
}

void DirectExecutor::waitAllInputs() {
  // Peers are checked in the order they publish, not in rank order, so a
  // peer in another call is named while this rank still waits for a slower
  // one: every rank that reads a peer names both calls, rather than hearing
  // of the mismatch from whoever found it first. The first peer that has not
  // published yet, or -1:
  const auto firstMissing = [&] {
    int missing = -1;
    for (int r = 0; r < nranks_; ++r) {
      if (!publishedInput(r) && missing < 0) missing = r;
    }
    return missing;
  };
  for (int r = firstMissing(); r >= 0; r = firstMissing()) {
    waitFor(
        waiter_, [&] { return firstMissing() != r; }, r, round_, "input");
  }
}

void DirectExecutor::waitAll(std::atomic<uint64_t> SegmentHeader::*seq, const char* what) {
  for (int r = 0; r < nranks_; ++r) {
    const SegmentHeader& peer = *arenas_[r].header;
    auto& published = peer.*seq;
    const auto withdrawn = [&] {
      return peer.withdrawnSeq.load(std::memory_order_acquire) >= round_;
    };
    waitFor(
        waiter_, [&] { return published.load(std::memory_order_acquire) >= round_ || withdrawn(); },
        r, round_, what);
    if (published.load(std::memory_order_acquire) < round_) throw LeftRound(r, round_);
  }
}

void DirectExecutor::waitAllOutputs() { waitAll(&SegmentHeader::outputSeq, "result"); }

void DirectExecutor::reduceAll(char* out, size_t at, size_t count, const ReduceContext& rc,
                               int parity, const char* own) {
  const auto source = [&](int r) -> const char* {
    return r == rank_ && own != nullptr ? own : arenas_[r].input[parity] + at;
  };
  rc.reduce(out, source(0), source(1), count);
  for (int r = 2; r < nranks_; ++r) rc.reduce(out, out, source(r), count);
  if (rc.finalize != nullptr) rc.finalize(out, count, rc.nranks);
}

static_assert(std::extent_v<decltype(SegmentHeader::decisions)> == kTwoRankSumSlot + 1);
static_assert(std::extent_v<decltype(SegmentHeader::decisions), 1> == 2);

void DirectExecutor::publishDecision(const MeasuredChoice& choice, int slot) {
  if (slot < 0) throw Error(ErrorCode::InternalError, "no header slot for a rank-local choice");
  if (rank_ != 0 || !choice.measures()) return;
  arenas_[rank_].header->decisions[slot][round_ & 1].store(choice.decision(),
                                                           std::memory_order_relaxed);
}

void DirectExecutor::adoptDecision(MeasuredChoice& choice, int slot) const {
  // Read after rank 0's inputSeq of this round (acquire), which it wrote
  // after the decision: every rank adopts the same one in the same round.
  choice.adopt(arenas_[0].header->decisions[slot][round_ & 1].load(std::memory_order_relaxed));
}

DirectExecutor::TimedRound DirectExecutor::startTimedRound(const MeasuredChoice& choice,
                                                           size_t bytes, bool leads) const {
  TimedRound round;
  round.timed = leads && choice.measures();
  if (round.timed) round.started = std::chrono::steady_clock::now();
  round.bytes = bytes;
  return round;
}

void DirectExecutor::finishTimedRound(const TimedRound& round, MeasuredChoice& choice, bool second,
                                      const ChoiceNames& names) {
  if (!round.timed) return;
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - round.started);
  if (!choice.record(round.bytes, second, static_cast<uint64_t>(nanos.count()))) return;
  const int c = MeasuredChoice::sizeClass(round.bytes);
  LOOM_INFO("{} of {}-byte rounds (size class {}): {} ({} {:.3f} ns/B, {} {:.3f} ns/B)",
            names.choice, round.bytes, c, names.way(MeasuredChoice::secondIn(choice.decision(), c)),
            names.way(false), choice.nanosPerByte(round.bytes, false), names.way(true),
            choice.nanosPerByte(round.bytes, true));
}

DirectExecutor::ArenaRound DirectExecutor::startArenaRound(size_t bytes, bool leads) {
  ArenaRound round;
  MeasuredChoice* choice = options_.arenaStores;
  if (choice == nullptr) return round;
  // A round under one streamed block stays cached and untimed: its clock
  // would cost more than its stores could differ (an 8-byte broadcast took
  // 0.19-0.28 us measuring, 0.14-0.22 with cached stores fixed). Every rank
  // skips the same rounds, so the choice's counts stay in step.
  if (choice->measures() && bytes < kStreamedBlockBytes) return round;
  round.streaming = choice->takesSecond(bytes);
  round.clock = startTimedRound(*choice, bytes, leads);
  return round;
}

DirectExecutor::ArenaRound DirectExecutor::startWriterRound(size_t bytes, bool writes) {
  return writes ? startArenaRound(bytes, true) : ArenaRound{};
}

void DirectExecutor::finishWriterRound(const ArenaRound& round, const ChoiceNames& names) {
  if (!round.clock.timed) return;
  finishTimedRound(round.clock, *options_.arenaStores, round.streaming, names);
  options_.arenaStores->adopt(options_.arenaStores->decision());
}

void DirectExecutor::exchangeArenaInputs(int parity, std::optional<bool> sharedOffer,
                                         FunctionRef<void()> whilePeersCopyIn) {
  if (options_.arenaStores != nullptr) {
    publishDecision(*options_.arenaStores, options_.arenaStoreSlot);
  }
  if (sharedOffer) arenas_[rank_].header->sharedOffer[parity] = *sharedOffer ? 1 : 0;
  publishInput();
  whilePeersCopyIn();
  waitAllInputs();
  // The store decision from the next round: this one's stores are written already.
  if (options_.arenaStores != nullptr) {
    adoptDecision(*options_.arenaStores, options_.arenaStoreSlot);
  }
  if (sharedOffer) learnSharedBuffers(parity);
}

void DirectExecutor::finishArenaRound(const ArenaRound& round) {
  if (options_.arenaStores != nullptr) {
    finishTimedRound(round.clock, *options_.arenaStores, round.streaming, kArenaStoreNames);
  }
}

void DirectExecutor::reduceOwnShard(char* shard, char* result, size_t at, size_t count, size_t es,
                                    const ReduceContext& rc, int parity, const char* own,
                                    bool streamShard, bool streamResult) {
  reduceInBlocks(
      count, es,
      [&](char* block, size_t first, size_t n) {
        reduceAll(block, at + first * es, n, rc, parity, own + first * es);
      },
      ReducedHome{shard, streamShard}, ReducedHome{result, streamResult});
}

void DirectExecutor::allReduceSmall(const char* in, char* out, size_t count, size_t es,
                                    const ReduceContext& rc) {
  const int p = beginRound();
  SmallSlot& mine = arenas_[rank_].header->small[p];
  std::memcpy(mine.data, in, count * es);
  mine.call = options_.call;
  bytesSent_ += count * es;
  mine.round.store(round_, std::memory_order_release);
  ringPeers();
  for (int r = 0; r < nranks_; ++r) {
    const SegmentHeader& peer = *arenas_[r].header;
    const auto& slot = peer.small[p];
    if (slot.round.load(std::memory_order_acquire) < round_) {
      // A peer that published this round through its input region is in another call.
      waitFor(
          waiter_,
          [&] {
            return slot.round.load(std::memory_order_acquire) >= round_ ||
                   peer.inputSeq.load(std::memory_order_acquire) >= round_;
          },
          r, round_, "input");
      if (slot.round.load(std::memory_order_acquire) < round_) throw CallMismatch(r);
    }
    checkSameCall(r, slot.call);
  }
  // Staged through a local copy: `out` may alias `in`, which rank_'s slot no longer needs.
  alignas(16) char acc[kSmallSlotBytes];
  rc.reduce(acc, arenas_[0].header->small[p].data, arenas_[1].header->small[p].data, count);
  for (int r = 2; r < nranks_; ++r) rc.reduce(acc, acc, arenas_[r].header->small[p].data, count);
  if (rc.finalize != nullptr) rc.finalize(acc, count, rc.nranks);
  std::memcpy(out, acc, count * es);
}

void DirectExecutor::allReduce(const char* in, char* out, size_t count, size_t es,
                               const ReduceContext& rc) {
  if (nranks_ == 1) {
    reduceAlone(in, out, count, es, rc);
    return;
  }
  if (count > 0 && count * es <= kSmallSlotBytes) {
    allReduceSmall(in, out, count, es, rc);
    return;
  }
  if (singleCopy(count * es, true) &&
      runSingleCopy([&] { return singleCopyAllReduce(in, out, count, es, rc); }))
    return;
  const size_t perRound = arenaBytes_ / es;
  const bool nonTemporal =
      count * es >= options_.nonTemporalMinBytes && !overlaps(in, out, count * es);
  const std::optional<bool> sharedOffer =
      sharingOffer(count * es, options_.inputFile.valid() && options_.outputFile.valid() &&
                                   !overlaps(in, out, count * es));
  for (size_t done = 0; done < count; done += perRound) {
    const size_t n = std::min(perRound, count - done);
    const size_t bytes = n * es;
    const int p = beginRound();
    if (bytes <= options_.oneShotBytes) {
      std::memcpy(arenas_[rank_].input[p], in + done * es, bytes);
      bytesSent_ += bytes;
      publishInput();
      waitAllInputs();
      reduceAll(out + done * es, 0, n, rc, p);
      continue;
    }
    // Peers reduce their shards from this copy; this rank's own shard is
    // read from `in` where it is, so it is not copied in (at two ranks a
    // fifth less memory traffic: 1.1-1.8x the bus bandwidth from 1 to 64 MiB).
    const ArenaRound stores = startArenaRound(bytes, rank_ == 0);
    const size_t shardOffset = chunkOffset(n, nranks_, rank_);
    const size_t shardCount = chunkSize(n, nranks_, rank_);
    const size_t after = (shardOffset + shardCount) * es;
    copyBytes(arenas_[rank_].input[p], in + done * es, shardOffset * es, stores.streaming);
    copyBytes(arenas_[rank_].input[p] + after, in + done * es + after, bytes - after,
              stores.streaming);
    bytesSent_ += bytes - shardCount * es;
    exchangeArenaInputs(p, done == 0 ? sharedOffer : std::nullopt, [] {});
    if (shardCount > 0) {
      reduceOwnShard(arenas_[rank_].output[p] + shardOffset * es, out + (done + shardOffset) * es,
                     shardOffset * es, shardCount, es, rc, p, in + (done + shardOffset) * es,
                     stores.streaming, nonTemporal);
      bytesSent_ += shardCount * es;
    }
    publishOutput();
    waitAllOutputs();
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_) continue;
      const size_t off = chunkOffset(n, nranks_, r) * es;
      copyBytes(out + done * es + off, arenas_[r].output[p] + off, chunkSize(n, nranks_, r) * es,
                nonTemporal);
    }
    finishArenaRound(stores);
  }
}

void DirectExecutor::allGather(const char* in, char* out, size_t count, size_t es) {
  const size_t perRound = arenaBytes_ / es;
  if (nranks_ == 1) {
    if (in != out) std::memmove(out, in, count * es);
    return;
  }
  if (singleCopy(count * es, true) &&
      runSingleCopy([&] { return singleCopyAllGather(in, out, count, es); }))
    return;
  // As for all-reduce: past the cache from LOOM_NONTEMPORAL_MIN of output.
  const bool nonTemporal =
      static_cast<size_t>(nranks_) * count * es >= options_.nonTemporalMinBytes;
  const bool inPlace = in == out + static_cast<size_t>(rank_) * count * es;
  const std::optional<bool> sharedOffer = sharingOffer(count * es, options_.inputFile.valid());
  for (size_t done = 0; done < count; done += perRound) {
    const size_t n = std::min(perRound, count - done);
    const int p = beginRound();
    const ArenaRound stores = startArenaRound(n * es, rank_ == 0);
    copyBytes(arenas_[rank_].input[p], in + done * es, n * es, stores.streaming);
    bytesSent_ += n * es;
    // This rank's own block comes from `in`, whose lines it just read, while
    // the peers may still be copying theirs in; in place it is there already.
    exchangeArenaInputs(p, done == 0 ? sharedOffer : std::nullopt, [&] {
      if (inPlace) return;
      copyBytes(out + (static_cast<size_t>(rank_) * count + done) * es, in + done * es, n * es,
                nonTemporal);
    });
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_) continue;
      copyBytes(out + (static_cast<size_t>(r) * count + done) * es, arenas_[r].input[p], n * es,
                nonTemporal);
    }
    finishArenaRound(stores);
  }
}

void DirectExecutor::reduceScatter(const char* in, char* out, size_t recvCount, size_t es,
                                   const ReduceContext& rc) {
  if (nranks_ == 1) {
    reduceAlone(in, out, recvCount, es, rc);
    return;
  }
  if (singleCopy(recvCount * es, true) &&
      runSingleCopy([&] { return singleCopyReduceScatter(in, out, recvCount, es, rc); }))
    return;
  const size_t perRound = std::max<size_t>(1, arenaBytes_ / es / nranks_);
  const char* ownBlock = in + static_cast<size_t>(rank_) * recvCount * es;
  // Out of place, this rank's own block is read from `in` where it is; in
  // place the reduction overwrites it as it goes, so it is copied in too.
  const bool readOwnInPlace = !overlaps(ownBlock, out, recvCount * es);
  const std::optional<bool> sharedOffer = sharingOffer(recvCount * es, options_.inputFile.valid());
  for (size_t done = 0; done < recvCount; done += perRound) {
    const size_t n = std::min(perRound, recvCount - done);
    const int p = beginRound();
    const size_t roundBytes = static_cast<size_t>(nranks_) * n * es;
    const ArenaRound stores = startArenaRound(roundBytes, rank_ == 0);
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_ && readOwnInPlace) continue;
      copyBytes(arenas_[rank_].input[p] + static_cast<size_t>(r) * n * es,
                in + (static_cast<size_t>(r) * recvCount + done) * es, n * es, stores.streaming);
    }
    bytesSent_ += static_cast<uint64_t>(nranks_ - 1) * n * es;  // its own block stays
    exchangeArenaInputs(p, done == 0 ? sharedOffer : std::nullopt, [] {});
    reduceAll(out + done * es, static_cast<size_t>(rank_) * n * es, n, rc, p,
              readOwnInPlace ? ownBlock + done * es : nullptr);
    finishArenaRound(stores);
  }
}

void DirectExecutor::broadcast(const char* in, char* out, size_t count, size_t es, int root) {
  // Where the root's own result is still to be written: single-copy peers
  // read it from `out`, so it is written first; the arena rounds write it a
  // round at a time, from lines just read, while the peers copy theirs out.
  bool rootCopiesOut = rank_ == root && in != out;
  if (nranks_ == 1 || singleCopy(count * es, false)) {
    if (rootCopiesOut) std::memmove(out, in, count * es);
    rootCopiesOut = false;
    if (nranks_ == 1 || runSingleCopy([&] { return singleCopyBroadcast(out, count, es, root); }))
      return;
  }
  const size_t perRound = arenaBytes_ / es;
  // The others' results past the cache from LOOM_NONTEMPORAL_MIN, as for all-reduce.
  const bool nonTemporal = count * es >= options_.nonTemporalMinBytes;
  for (size_t done = 0; done < count; done += perRound) {
    const size_t n = std::min(perRound, count - done);
    const ArenaRound stores = startWriterRound(n * es, rank_ == root);
    const int p = beginRound();
    if (rank_ == root) {
      copyBytes(arenas_[rank_].input[p], in + done * es, n * es, stores.streaming);
      bytesSent_ += n * es;
    }
    publishInput();
    if (rootCopiesOut) copyBytes(out + done * es, in + done * es, n * es, nonTemporal);
    finishWriterRound(stores, kBroadcastStoreNames);
    if (rank_ != root) {
      waitInput(root);
      copyBytes(out + done * es, arenas_[root].input[p], n * es, nonTemporal);
    }
  }
}

void DirectExecutor::reduce(const char* in, char* out, size_t count, size_t es,
                            const ReduceContext& rc, int root) {
  if (nranks_ == 1) {
    reduceAlone(in, out, count, es, rc);
    return;
  }
  if (singleCopy(count * es, false) &&
      runSingleCopy([&] { return singleCopyReduce(in, out, count, es, rc, root); }))
    return;
  const size_t perRound = arenaBytes_ / es;
  // The root reads its own input where it is, unless the reduction into `out`
  // would overwrite it first (in place).
  const bool rootReadsInPlace = rank_ == root && !overlaps(in, out, count * es);
  for (size_t done = 0; done < count; done += perRound) {
    const size_t n = std::min(perRound, count - done);
    const ArenaRound stores = startWriterRound(n * es, rank_ != root);
    const int p = beginRound();
    if (!rootReadsInPlace) {
      copyBytes(arenas_[rank_].input[p], in + done * es, n * es, stores.streaming);
    }
    if (rank_ != root) bytesSent_ += n * es;
    publishInput();
    finishWriterRound(stores, kReduceStoreNames);
    if (rank_ == root) {
      waitAllInputs();
      reduceAll(out + done * es, 0, n, rc, p, rootReadsInPlace ? in + done * es : nullptr);
    }
  }
}

}  // namespace loom
