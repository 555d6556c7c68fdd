// One user call (a collective or a send/recv), validated, and how a batch of
// them (a group, or a single call) runs.
#pragma once

#include <optional>
#include <span>

#include "collectives/plan.h"
#include "comm/comm.h"
#include "compression/codec_config.h"
#include "compression/error_feedback.h"
#include "core/types.h"

namespace loom {

struct Operation {
  Collective collective = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType type = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  /// The datatype and op as the C caller passed them (any int): checked whole
  /// before they mean anything, since `type` and `op` hold only 8 bits.
  std::optional<int> callerType;
  std::optional<int> callerOp;
  int root = 0;  // root, or the peer of Send/Recv
  /// In-flight compression (AllReduce, ReduceScatter, AllGather on fp32/fp16/bf16).
  CodecConfig codec;
  /// Error feedback for the compressed reductions (nullptr: none).
  ErrorFeedback* feedback = nullptr;
  /// The caller's cudaStream_t (device buffers only; host calls ignore it).
  void* stream = nullptr;
  /// Set by validateOperation: the buffers are device memory.
  bool onDevice = false;
  /// Set by validateOperation: the buffers are known to CUDA (device, pinned or
  /// managed), so the call is ordered after the caller's work on `stream`.
  bool streamOrdered = false;
  /// An agreement between the ranks inside a call or at init
  /// (exchange_values.h): it takes the number of the call it serves, so the
  /// numbers in error messages and peer states count the caller's calls.
  bool internal = false;
};

/// Checks every argument against `comm`; throws InvalidArgument naming the bad
/// one, touching no buffer. Records where the buffers live in op.onDevice.
void validateOperation(const Comm& comm, Operation& op);

/// Runs `ops` of one communicator: collectives in order, then all sends and
/// receives together so exchanges cannot deadlock. Device buffers are staged
/// through host memory (DeviceStaging).
void runOperations(Comm& comm, std::span<const Operation> ops);
/// runOperations for ops whose buffers are all host-accessible.
void runHostOperations(Comm& comm, std::span<const Operation> ops);

struct AlgorithmChoice {
  Algorithm algorithm = Algorithm::Ring;
  size_t sliceBytes = 0;  ///< executor slice: the same on every rank
  int channels = 1;       ///< link sets an all-reduce spreads over (PlanRequest::channels)
};

/// Algorithm and slice for a collective of `bytes` bytes: LOOM_ALGO, else the
/// tuner when ranks span hosts, else the size/locality rule
/// (choose_algorithm.cc). Every rank gets the same answer.
AlgorithmChoice chooseAlgorithm(const Comm& comm, Collective collective, size_t bytes);
/// The algorithm the kernel path walks a collective of `bytes` with (it runs
/// plans without scratch): LOOM_ALGO where it names the ring, or the tree for
/// all-reduce or broadcast; else the same tree threshold as chooseAlgorithm's
/// rule; else the collective's usual algorithm. Alike on every rank.
Algorithm chooseWalkAlgorithm(const Comm& comm, Collective collective, size_t bytes);
/// The plan request of `op` on this rank: the one way a call asks for a plan.
PlanRequest planRequestFor(const Comm& comm, const Operation& op, Algorithm algorithm,
                           int channels = 1);

bool isReduction(Collective c);

/// Whether `op` is a send or receive (the others are collectives). Those are
/// called by the ranks that exchange, not by every rank, so nothing decided
/// for them may need the whole communicator.
bool isPointToPoint(const Operation& op);
/// Whether any of `ops` is a collective (every rank of the communicator takes part).
bool hasCollective(std::span<const Operation> ops);
/// The device whose memory `op`'s buffers are in, or -1 when they are not
/// device memory (the device paths' question).
int deviceOf(const Operation& op);

/// Whether send/recv are the C API's in-place layout for this collective
/// (all-reduce etc.: same pointer; all-gather/gather: send = recv + rank*count;
/// reduce-scatter/scatter: recv = send + rank*count; never for all-to-all).
bool isInPlace(const Comm& comm, const Operation& op);

/// Runs one collective without the batching of runOperations; compressed
/// collectives compose themselves from these.
void runCollective(Comm& comm, const Operation& op);

/// Runs Send/Recv operations together in waves, so exchanges cannot deadlock.
void runPointToPoint(Comm& comm, std::span<const Operation* const> ops);

/// The compressed forms (compressed_collectives.cc): encode once per rank,
/// move encoded bytes with the ordinary collectives, decode.
void runCompressed(Comm& comm, const Operation& op);
/// Counts a compressed call and its input bytes in comm.stats, whichever path ran it.
void recordCompressedCall(Comm& comm, const Operation& op);

/// Largest world where Auto picks sparse all-gather for a topk all-reduce.
inline constexpr int kSparseAllGatherMaxRanks = 4;
/// Largest multi-host world where Auto keeps two-shot (beyond: ring).
inline constexpr int kTwoShotMaxRanksAcrossHosts = 16;

/// The algorithm a compressed call runs: the one asked for, else by rule
/// (docs/compression.md, "Choosing the algorithm"). The same on every rank.
CompressedAlgorithm chooseCompressedAlgorithm(const Comm& comm, const Operation& op);

}  // namespace loom
