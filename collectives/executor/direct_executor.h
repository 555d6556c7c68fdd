// The direct algorithm for ranks that share one host: every rank copies its
// piece of the message into its own arena region in shared memory and
// publishes a round number; then ranks read each other's regions directly.
// All-reduce is reduce-scatter by reading all (each rank reduces its shard in
// rank order 0..n-1) followed by all-gather by reading all; below a size
// threshold every rank reduces the whole piece itself, saving one wait.
// Either way every rank's result comes from one fixed reduction order, so
// all-reduce outputs are bit-identical across ranks.
//
// Regions are double-buffered by round parity. Before a rank rewrites its
// regions of parity p in round s it waits until every rank published round
// s-1, which a rank only does after it finished reading round s-2 (the last
// round of parity p). That one rule makes reuse safe for every collective.
//
// Large messages skip the arena where every peer's memory can be read in place
// (direct_single_copy.cc): threads of one process, registered loomMemAlloc
// buffers, or cross-memory attach. Ranks publish where their own buffers are
// instead of copying them, and read each other's directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "collectives/executor/arena_stores.h"
#include "collectives/executor/step_executor.h"
#include "collectives/executor/two_rank_sum.h"
#include "collectives/executor/waiter.h"
#include "core/error.h"
#include "core/function_ref.h"
#include "transports/shm/peer_memory.h"
#include "transports/shm/shm_domain.h"

namespace loom {

/// Whether [a, a + bytes) and [b, b + bytes) share a byte.
inline bool overlaps(const char* a, const char* b, size_t bytes) {
  return a < b + bytes && b < a + bytes;
}

/// Bytes a single-copy reduction handles at a time: a block of each peer's
/// contribution and the running sum stay in the core's L2 cache.
inline constexpr size_t kSingleCopyBlockBytes = size_t{128} << 10;

/// What every direct round carries so that ranks in different calls notice
/// instead of mixing their data: a fingerprint of the call; never 0.
uint64_t callFingerprint(Collective collective, size_t count, DataType type, ReduceOp op, int root);

/// The call a single-copy exposure round publishes: `call` tagged, never 0.
uint64_t exposureCall(uint64_t call);

/// A peer published this round for a different call (collective, count,
/// type, op or root differ, or it took another path). InvalidUsage; the
/// communicator names both calls.
class CallMismatch : public Error {
 public:
  explicit CallMismatch(int peer)
      : Error(ErrorCode::InvalidUsage, fmt::format("rank {} is in a different call", peer)),
        peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

/// A peer left the single-copy round early (it failed or was aborted) and
/// withdrew its buffers. RemoteError; the peer's own error says why.
class LeftRound : public Error {
 public:
  LeftRound(int peer, uint64_t round)
      : Error(ErrorCode::RemoteError,
              fmt::format("rank {} left direct round {} early (it failed or was aborted)", peer,
                          round)) {}
};

/// Where only loomMemAlloc buffers are read in place across processes: whether
/// the last call of a collective that single-copy could serve found every
/// rank's buffers shared (one state per collective). Only then does a call
/// try single-copy, since an exposure round that finds private buffers costs
/// the arena rounds after it their alternation (a fifth of the bus bandwidth
/// at 256 KiB). All-reduce, all-gather and reduce-scatter learn it free in
/// their first arena round; broadcast and reduce, whose ranks do not all wait
/// for each other there, try once every kSharedRetryCalls calls. Every rank
/// makes the same calls, so it holds the same state.
struct SharedBuffersState {
  bool shared = false;
  uint32_t untried = 0;  ///< calls since the last try
};
inline constexpr uint32_t kSharedRetryCalls = 16;

/// Rank 0's header slot (SegmentHeader::decisions) of the two-rank sum's
/// decision, after the arena stores' slots.
inline constexpr int kTwoRankSumSlot = kArenaStoreSlots;

struct DirectOptions {
  /// callFingerprint of this call, published with every round and compared
  /// with the peers'.
  uint64_t call = 0;
  /// All-reduces up to this size reduce the whole message on every rank.
  size_t oneShotBytes = size_t{32} << 10;
  /// All-reduce, all-gather and broadcast results at least this large are
  /// copied out of the arena with stores that bypass the cache, except over
  /// an input just read (direct_executor.cc says why).
  size_t nonTemporalMinBytes = SIZE_MAX;
  /// Messages of at least this many bytes (what one rank contributes) run
  /// single-copy when `peers` can read every rank; others use the arena.
  size_t singleCopyMinBytes = SIZE_MAX;
  const PeerMemory* peers = nullptr;
  /// Whether every rank reads every peer's buffers whatever they are
  /// (threads, or cross-memory attach everywhere). If not, a single-copy
  /// round goes ahead only where the buffers that ranks in other processes
  /// read lie in loomMemAlloc allocations (their files below), which every
  /// rank learns from the others' exposure; else all take the arena.
  bool peersReadable = true;
  /// This rank's buffers' places in loomMemAlloc allocations registered with
  /// the communicator (invalid where they are not).
  SharedFileRef inputFile;
  SharedFileRef outputFile;
  /// Where !peersReadable: what the communicator knows of its ranks' buffers
  /// (SharedBuffersState).
  SharedBuffersState* sharedBuffers = nullptr;
  /// Scratch for single-copy reductions: at least 2 * kSingleCopyBlockBytes.
  std::span<char> scratch;
  /// How the arena rounds are written (arena_stores.h): the communicator's
  /// choice for this collective, kept across calls, and its slot in rank 0's
  /// header (-1 where each writer chooses alone: broadcast, reduce). Null:
  /// cached stores.
  MeasuredChoice* arenaStores = nullptr;
  int arenaStoreSlot = -1;
  /// All-reduce: how two ranks that read each other's buffers in place run
  /// single-copy out of place (two_rank_sum.h). Null: by shards.
  MeasuredChoice* twoRankSum = nullptr;
};

class DirectExecutor {
 public:
  /// `arenas`: every rank's arena, indexed by rank; `round`: the communicator's
  /// direct round counter (same on all ranks). `waiter` and `options` are
  /// kept by reference and must outlive the executor.
  DirectExecutor(std::span<const ArenaView> arenas, int rank, size_t arenaBytes, uint64_t& round,
                 Waiter& waiter, const DirectOptions& options);

  void allReduce(const char* in, char* out, size_t count, size_t elementSize,
                 const ReduceContext& rc);
  void allGather(const char* in, char* out, size_t count, size_t elementSize);
  void reduceScatter(const char* in, char* out, size_t recvCount, size_t elementSize,
                     const ReduceContext& rc);
  void broadcast(const char* in, char* out, size_t count, size_t elementSize, int root);
  void reduce(const char* in, char* out, size_t count, size_t elementSize, const ReduceContext& rc,
              int root);
  /// Bytes this rank wrote into its shared regions for peers to read.
  uint64_t bytesSent() const { return bytesSent_; }

 private:
  /// One round through the cache-line-sized small slots.
  void allReduceSmall(const char* in, char* out, size_t count, size_t elementSize,
                      const ReduceContext& rc);
  /// Starts round `round_+1`: waits until its parity's regions are free.
  int beginRound();
  void ringPeers();
  void publishInput();
  void publishOutput();
  /// Whether rank r published this round's input; throws CallMismatch if it
  /// published another call.
  bool publishedInput(int r) const;
  void waitInput(int rank);
  /// Throws CallMismatch unless rank r's round belongs to this call.
  void checkSameCall(int r, uint64_t theirs) const {
    if (theirs != roundCall_) throw CallMismatch(r);
  }
  void waitAllInputs();
  void waitAllOutputs();
  /// out = in_0 (+) in_1 (+) ... over all ranks' input regions at byte offset
  /// `at`, in rank order; this rank's term from `own` instead where given.
  void reduceAll(char* out, size_t at, size_t count, const ReduceContext& rc, int parity,
                 const char* own = nullptr);
  /// The leader's clock for one round of a MeasuredChoice (rank 0, or a
  /// writer that chooses alone).
  struct TimedRound {
    bool timed = false;
    size_t bytes = 0;
    std::chrono::steady_clock::time_point started;
  };
  /// Starts the clock where this rank `leads` and the choice measures.
  TimedRound startTimedRound(const MeasuredChoice& choice, size_t bytes, bool leads) const;
  /// The leader: the round is over; its time teaches `choice` about the way
  /// it took. A changed preference is logged (LOOM_DEBUG=INFO).
  void finishTimedRound(const TimedRound& round, MeasuredChoice& choice, bool second,
                        const ChoiceNames& names);
  /// Rank 0, before its input of this round is published: the decision of
  /// `choice` in its header's `slot` (SegmentHeader::decisions).
  void publishDecision(const MeasuredChoice& choice, int slot);
  /// Every rank, once rank 0's input of this round is seen: its decision.
  void adoptDecision(MeasuredChoice& choice, int slot) const;
  /// How one arena round is written: the stores of the collective's choice
  /// for this round (arena_stores.h), and the leader's clock for learning it.
  struct ArenaRound {
    bool streaming = false;
    TimedRound clock;
  };
  /// Counts a round of the collective's choice; `leads`: this rank times it.
  ArenaRound startArenaRound(size_t bytes, bool leads);
  /// Publishes this arena round's input with rank 0's store decision (and,
  /// where `sharedOffer` holds, whether this rank's buffers are shared) and
  /// waits for every rank's; then adopts the decision for the next round and
  /// learns what every rank offered. `whilePeersCopyIn` runs between this
  /// rank's publication and the wait for the others'.
  void exchangeArenaInputs(int parity, std::optional<bool> sharedOffer,
                           FunctionRef<void()> whilePeersCopyIn);
  void finishArenaRound(const ArenaRound& round);
  /// A round of broadcast (at its root) or reduce (at the other ranks), whose
  /// writers no rank waits for in step: each writer chooses its stores alone
  /// and times the round from before its wait to reuse the round's arena
  /// parity (where readers slowed by its stores show; hence the choice's
  /// lag, arenaStoreLag). Called before beginRound. Other ranks (`writes`
  /// false) only read: cached, untimed.
  ArenaRound startWriterRound(size_t bytes, bool writes);
  /// Records the round and adopts the writer's own decision.
  void finishWriterRound(const ArenaRound& round, const ChoiceNames& names);
  /// This rank's shard of an arena all-reduce, reduced a block in L1 at a
  /// time into both its homes: `shard` in the arena, for the peers, and
  /// `result` in the caller's output, so the result is not read back.
  void reduceOwnShard(char* shard, char* result, size_t at, size_t count, size_t es,
                      const ReduceContext& rc, int parity, const char* own, bool streamShard,
                      bool streamResult);

  // Single-copy rounds (direct_single_copy.cc).
  /// Whether this call of one rank's `bytes` runs single-copy (once per call:
  /// it counts the calls of SharedBuffersState). `learnsInArena`: the
  /// collective learns whether buffers are shared in its arena rounds, so it
  /// never tries blind.
  bool singleCopy(size_t bytes, bool learnsInArena);
  /// Whether one rank's `bytes` are enough for single-copy where it can read.
  bool singleCopySized(size_t bytes) const;
  /// What a call's first arena round offers its peers for sharedBuffers:
  /// `offered` (this rank's buffers would serve) where single-copy could
  /// serve the call if every rank's buffers were shared; else nothing.
  std::optional<bool> sharingOffer(size_t bytes, bool offered) const;
  /// After the inputs of a round that offered: what every rank offered.
  void learnSharedBuffers(int parity);
  /// For ThreadSanitizer (core/race_annotations.h): what a publication
  /// orders, announced on an address every thread rank knows.
  const void* ownerToken(int r) const;
  void announcePublished() const;
  void announceSeen() const;
  /// What a single-copy round shows its peers: the buffers they read, in
  /// this process's addresses and as places in shared files.
  struct Exposure {
    const char* in;
    size_t inBytes;
    SharedFileRef inFile;
    const char* out;
    size_t outBytes;
    SharedFileRef outFile;
    /// All-reduce: peers read outputs too (the shards), and where buffers
    /// are read in place only as shared files, every rank must be out of
    /// place (in place, the arena measured faster between processes).
    bool allReduce;
  };
  /// Starts a round that exposes the buffers and waits until every rank did;
  /// false if some rank cannot read what it needs (options_.peersReadable).
  bool exposeBuffers(const Exposure& exposure);
  /// Whether every rank can read rank r's exposed input (output) without
  /// cross-memory attach: it is a shared file, or all ranks share r's process.
  bool readableInPlace(int r, bool output) const;
  /// Whether rank r's exposed input and output of `bytes` share no byte.
  bool exposedOutOfPlace(int r, size_t bytes) const;
  /// Rank r's exposed input (output) as an address here, or nullptr where it
  /// is read with cross-memory attach.
  const char* localView(int r, bool output, size_t bytes) const;
  /// Ends it: this rank read its last; returns once every rank did, so no
  /// peer reads this rank's buffers after the call returns.
  void releaseBuffers();
  /// Leaving a round early (an exception): marks this rank's buffers as
  /// withdrawn and waits until no thread rank reads them by pointer.
  void withdrawBuffers() noexcept;
  /// Around reads of peers' buffers: counts this rank among the readers of
  /// every pointer peer (or only of `only`, if not -1); throws LeftRound if
  /// one of them withdrew.
  void beginPointerReads(int only) const;
  void endPointerReads(int only) const noexcept;
  bool readsByPointer(int r, int only) const;
  class PointerReads;
  /// Runs a single-copy round (false: it found the buffers unreadable and
  /// did nothing, so the arena runs); withdraws this rank's buffers if it throws.
  template <typename Round>
  bool runSingleCopy(Round round);
  /// Wait until every rank published `seq` >= this round.
  void waitAll(std::atomic<uint64_t> SegmentHeader::*seq, const char* what);
  /// `bytes` of rank r's exposed input (or output) at byte `offset`.
  const char* peerView(int r, bool output, size_t offset, size_t bytes, char* scratch,
                       const char* mine) const;
  void readPeer(int r, bool output, size_t offset, char* to, size_t bytes) const;
  /// to[0..count) = reduction over every rank's exposed input at element
  /// `from` (rank order 0..n-1, as the arena path reduces); `mine` is this
  /// rank's own input at that place.
  void reduceExposed(char* to, const char* mine, size_t from, size_t count, size_t es,
                     const ReduceContext& rc);
  /// Whether this single-copy all-reduce is the two-rank case that may have
  /// each rank sum the whole message itself (two_rank_sum.h): both ranks out
  /// of place, reading each other in place. Decided from the exposed
  /// buffers, so alike on both.
  bool mayChooseWholeSum(size_t bytes) const;
  void sumWholeMessage(const char* in, char* out, size_t count, size_t es, const ReduceContext& rc);
  /// Each rank reduces its shard from every input, publishes it, and copies
  /// the others' shards from their outputs.
  void sumByShards(const char* in, char* out, size_t count, size_t es, const ReduceContext& rc);
  bool singleCopyAllReduce(const char* in, char* out, size_t count, size_t es,
                           const ReduceContext& rc);
  bool singleCopyAllGather(const char* in, char* out, size_t count, size_t es);
  bool singleCopyReduceScatter(const char* in, char* out, size_t recvCount, size_t es,
                               const ReduceContext& rc);
  bool singleCopyBroadcast(char* out, size_t count, size_t es, int root);
  bool singleCopyReduce(const char* in, char* out, size_t count, size_t es, const ReduceContext& rc,
                        int root);

  std::span<const ArenaView> arenas_;
  int rank_;
  int nranks_;
  size_t arenaBytes_;
  uint64_t& round_;
  Waiter& waiter_;
  /// Not a copy, for the reason Waiter keeps its label by reference.
  const DirectOptions& options_;
  uint64_t bytesSent_ = 0;  // written into this rank's shared regions for peers
  /// What this round publishes as its call: options_.call, tagged in a
  /// single-copy exposure round (exposureCall).
  uint64_t roundCall_;
  /// This single-copy round's peer buffers as addresses here, by rank
  /// (localView); filled by exposeBuffers.
  std::vector<const char*> peerInput_;
  std::vector<const char*> peerOutput_;
};

}  // namespace loom
