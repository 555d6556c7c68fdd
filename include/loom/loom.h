/// Loom: collective communication for CPUs and GPUs.
///
/// The C API. Every function returns a loomResult_t; on failure
/// loomGetLastError() returns a message naming the values involved, and no user
/// buffer has been written. Buffers may be host memory (device memory with the
/// CUDA path). Enum values match NCCL's where both libraries have the concept, so
/// the NCCL ABI shim is a thin mapping.
#ifndef LOOM_LOOM_H_
#define LOOM_LOOM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_MAJOR 0
#define LOOM_MINOR 1
#define LOOM_PATCH 0
/// Version as one integer: major * 10000 + minor * 100 + patch.
#define LOOM_VERSION_CODE (LOOM_MAJOR * 10000 + LOOM_MINOR * 100 + LOOM_PATCH)

#define LOOM_UNIQUE_ID_BYTES 128

/// Opaque rendezvous handle: address of a listener plus a random secret.
/// Created by one process with loomGetUniqueId and handed to every rank.
typedef struct {
  char internal[LOOM_UNIQUE_ID_BYTES];
} loomUniqueId;

typedef struct loomComm* loomComm_t;

/// Stream handle; a cudaStream_t for device buffers, ignored for host buffers.
typedef void* loomStream_t;

typedef enum {
  loomSuccess = 0,
  loomUnhandledCudaError = 1,
  loomSystemError = 2,
  loomInternalError = 3,
  loomInvalidArgument = 4,
  loomInvalidUsage = 5,
  loomRemoteError = 6,  ///< a peer died, stalled past LOOM_TIMEOUT, or broke its connection
  loomInProgress = 7,
  loomAborted = 8,  ///< the communicator was aborted (loomCommAbort)
  loomRevoked = 9,  ///< a rank revoked the communicator (loomCommRevoke)
  loomNumResults = 10
} loomResult_t;

typedef enum {
  loomInt8 = 0,
  loomUint8 = 1,
  loomInt32 = 2,
  loomUint32 = 3,
  loomInt64 = 4,
  loomUint64 = 5,
  loomFloat16 = 6,
  loomFloat32 = 7,
  loomFloat64 = 8,
  loomBfloat16 = 9,
  loomNumTypes = 10
} loomDataType_t;

typedef enum {
  loomSum = 0,
  loomProd = 1,
  loomMax = 2,
  loomMin = 3,
  loomAvg = 4,  ///< sum divided by the number of ranks (integers: truncated toward zero)
  loomNumOps = 5
} loomRedOp_t;

/// In-flight compression (docs/compression.md).
typedef enum {
  loomCompressNone = 0,
  loomCompressInt8 = 1,  ///< block-wise absmax int8, one fp32 scale per block
  loomCompressTopK = 2   ///< keep the largest-magnitude `ratio` of each chunk
} loomCompressionKind_t;

/// How a compressed reduction carries the codec (docs/compression.md).
typedef enum {
  loomCompressAlgoAuto = 0,     ///< chosen per call (two-shot; sparse all-gather for topk on <= 4
                                ///< ranks; ring on > 16 ranks across hosts)
  loomCompressAlgoTwoShot = 1,  ///< encode once, all-to-all to owners, owners sum, all-gather
  loomCompressAlgoRing = 2,  ///< each hop decodes, adds its chunk, re-encodes (error grows with n)
  loomCompressAlgoSparseAllGather = 3  ///< topk all-reduce only: gather every top-k, exact sum
} loomCompressionAlgorithm_t;

/// Error feedback for one tensor (owned by the caller: the residual belongs to a
/// tensor across steps, not to a call). See loomErrorFeedbackCreate.
typedef struct loomErrorFeedback* loomErrorFeedback_t;

typedef struct {
  loomCompressionKind_t kind;
  int block;       ///< int8: elements per scale, a power of two in [8, 65536]; 0 = default (256)
  double ratio;    ///< topk: kept fraction in (0, 1]; 0 = default (0.01)
  uint64_t seed;   ///< int8 stochastic rounding: the same on every rank
  int stochastic;  ///< int8: 1 = stochastic rounding, 0 = round to nearest
  /// Optional (NULL: none). All-reduce and reduce-scatter add this tensor's
  /// residual to the input before encoding and keep what the codec dropped of
  /// this rank's contribution for the next call. Its count must equal the
  /// call's input (count for all-reduce, nranks * recvcount for reduce-scatter).
  loomErrorFeedback_t feedback;
  /// A loomCompressionAlgorithm_t; 0 (auto) in a zero-initialised struct.
  /// All-gather has one form and ignores it.
  int algorithm;
} loomCompression;

/// A zero residual for a tensor of `count` elements.
loomResult_t loomErrorFeedbackCreate(loomErrorFeedback_t* feedback, size_t count);
/// Forgets the residual (after a skipped step or a checkpoint reload).
loomResult_t loomErrorFeedbackReset(loomErrorFeedback_t feedback);
/// Copies the residual out (count elements), e.g. to checkpoint it.
loomResult_t loomErrorFeedbackGet(loomErrorFeedback_t feedback, float* residual, size_t count);
loomResult_t loomErrorFeedbackDestroy(loomErrorFeedback_t feedback);

/// Passing this as `color` to loomCommSplit leaves the rank out of every new comm.
#define LOOM_SPLIT_NOCOLOR (-1)
/// loomCommShrink flags.
#define LOOM_SHRINK_DEFAULT 0x00 /* shrink; calls in progress run on */
#define LOOM_SHRINK_ABORT 0x01   /* first revoke the parent, so calls in progress end */

/// Returns LOOM_VERSION_CODE of the library actually loaded.
loomResult_t loomGetVersion(int* version);
/// Bytes of one element of `type`; 0 when `type` is not a loomDataType_t.
size_t loomTypeSize(loomDataType_t type);
/// Short description of a result code; never NULL.
const char* loomGetErrorString(loomResult_t result);
/// Message of the last failed call on this thread (empty string if none).
const char* loomGetLastError(loomComm_t comm);

/// Starts a rendezvous listener in this process and describes it in *id.
loomResult_t loomGetUniqueId(loomUniqueId* id);
/// As loomGetUniqueId, but the listener is on loopback only: for jobs whose
/// ranks all run on this host, which then open nothing to the network.
loomResult_t loomGetLocalUniqueId(loomUniqueId* id);
/// Joins communicator `id` as `rank` of `nranks`; blocks until every rank joined
/// or LOOM_TIMEOUT passed.
loomResult_t loomCommInitRank(loomComm_t* comm, int nranks, loomUniqueId id, int rank);

/// Settings of one communicator that would otherwise come from the
/// environment. Start from LOOM_COMM_CONFIG_INITIALIZER: `size` lets later
/// versions add fields and still read what an older caller set.
typedef struct {
  size_t size;    ///< sizeof(loomCommConfig)
  int timeoutMs;  ///< deadline of every wait of this communicator (and its splits);
                  ///< 0: LOOM_TIMEOUT, else its default of 300 s
} loomCommConfig;
#define LOOM_COMM_CONFIG_INITIALIZER \
  { sizeof(loomCommConfig), 0 }

/// loomCommInitRank with `config` (NULL: as loomCommInitRank). A negative
/// timeout or a `size` too small for the fields is loomInvalidArgument.
loomResult_t loomCommInitRankConfig(loomComm_t* comm, int nranks, loomUniqueId id, int rank,
                                    const loomCommConfig* config);
/// Creates `ndev` ranks inside this process (one thread each may then drive
/// one). `devlist` may be NULL (every rank on the caller's current CUDA
/// device); else it names each rank's device. Devices matter, and devlist is
/// checked, only where the application has loaded CUDA.
loomResult_t loomCommInitAll(loomComm_t* comms, int ndev, const int* devlist);
/// Joins the world described by the environment: loomrun (LOOM_*), OpenMPI
/// (OMPI_COMM_WORLD_*), PMI, Slurm (SLURM_*) or torchrun (RANK, WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT). See docs/launching.md.
loomResult_t loomCommInitFromEnv(loomComm_t* comm);
/// Collective over `comm`: ranks with equal `color` form a new communicator,
/// ordered by `key` then by old rank. LOOM_SPLIT_NOCOLOR yields *newcomm = NULL.
loomResult_t loomCommSplit(loomComm_t comm, int color, int key, loomComm_t* newcomm);
/// Run by the survivors after a failure (docs/reliability.md, "Shrink"): they
/// agree, through the rendezvous, on which ranks are out, and form a new
/// communicator over the others, renumbered in their old order. Out are the
/// ranks any caller lists in `excludeRanks` (may be NULL when `excludeCount`
/// is 0), the ranks whose process died or that destroyed `comm`, and ranks
/// that do not call it within one timeout of the first caller. A caller that
/// finds itself out gets loomInvalidUsage. `comm` stays valid (destroy it after);
/// LOOM_SHRINK_ABORT revokes it first. Needs the rendezvous alive: it runs in
/// loomrun, or in the process that created the unique id.
loomResult_t loomCommShrink(loomComm_t comm, const int* excludeRanks, int excludeCount,
                            loomComm_t* newcomm, int flags);
/// Growing a communicator (docs/reliability.md, "Grow"), e.g. back to full
/// size after a shrink, in NCCL's shape. One member of `comm` calls
/// loomCommGetUniqueId, which starts the rendezvous of the grown communicator,
/// and hands *id to the new ranks by any means (it holds the secret that lets
/// them in). Then every member calls loomCommGrow(comm, nranks, NULL, -1,
/// &newcomm) and keeps its rank, and every new rank calls loomCommGrow(NULL,
/// nranks, &id, rank, &newcomm) with rank in [old size, nranks). `comm` stays
/// valid. On members `id` and `rank` are not read.
loomResult_t loomCommGetUniqueId(loomComm_t comm, loomUniqueId* id);
loomResult_t loomCommGrow(loomComm_t comm, int nranks, const loomUniqueId* id, int rank,
                          loomComm_t* newcomm);
/// Frees the communicator. Must not race with calls on the same comm.
loomResult_t loomCommDestroy(loomComm_t comm);
/// Marks `comm` aborted, wakes every call waiting on it (they return
/// loomAborted), waits for them to leave, then frees it like loomCommDestroy.
/// May be called from another thread while a collective runs on `comm`.
loomResult_t loomCommAbort(loomComm_t comm);
/// Revokes `comm` on every live rank, typically after an error: calls in
/// progress on any rank return loomRevoked within milliseconds, later calls at
/// once. Any rank may call it, from any thread, without waiting for anything
/// or freeing anything; twice is harmless. `comm` stays valid until
/// loomCommDestroy or loomCommAbort, which then do not wait for the peers.
loomResult_t loomCommRevoke(loomComm_t comm);
/// loomSuccess, or the error that broke the comm asynchronously (dead peer...);
/// for a revoked comm loomInProgress while a call of this rank is still
/// returning, then loomRevoked.
loomResult_t loomCommGetAsyncError(loomComm_t comm, loomResult_t* asyncError);
loomResult_t loomCommCount(const loomComm_t comm, int* count);

/// What a communicator has moved, counted by this rank since it was created.
typedef struct {
  uint64_t calls;                 ///< calls completed (a group counts once)
  uint64_t bytesSent;             ///< payload bytes this rank sent to peers, all calls
  uint64_t lastCallBytesSent;     ///< the same, for the last completed call
  uint64_t compressedCalls;       ///< calls that ran with a compression kind other than none
  uint64_t compressedInputBytes;  ///< input bytes those calls covered, before encoding
  /// Host exchanges Loom made among ranks for its own decisions (device paths
  /// agreeing on a path, trading FIFO addresses, growing scratch): a device
  /// collective in steady state makes none (docs/cuda.md, "Decided once").
  uint64_t agreements;
} loomCommStats;

/// Copies the counters (docs/compression.md, "Wire bytes"). "Sent" means
/// handed to a link, or, for the one-host direct algorithm, written into
/// shared memory for peers to read. Safe to call while another thread runs a
/// collective on `comm` (the counters are then as of the last completed call).
loomResult_t loomCommGetStats(const loomComm_t comm, loomCommStats* stats);
loomResult_t loomCommUserRank(const loomComm_t comm, int* rank);

/// Host memory that ranks in other processes on this host can read in place
/// (docs/performance.md, "Shared buffers"): page-aligned, zeroed, `size` 0
/// allowed. Registered with a communicator (loomCommRegister), such buffers
/// let its large collectives skip the copy through shared memory that
/// private buffers of another process need. Free with loomMemFree.
loomResult_t loomMemAlloc(void** ptr, size_t size);
/// Frees what loomMemAlloc gave; NULL is a no-op, any other pointer
/// loomInvalidArgument. Deregister the buffer from communicators first.
loomResult_t loomMemFree(void* ptr);
/// Registers [buff, buff + size) with `comm` (NCCL's ncclCommRegister):
/// large calls on buffers inside a loomMemAlloc allocation then read peers
/// in place. Any other buffer registers too and changes nothing. Local to
/// this rank; must not race with calls on the same comm.
loomResult_t loomCommRegister(const loomComm_t comm, void* buff, size_t size, void** handle);
/// Takes back a registration; loomInvalidArgument for an unknown handle.
loomResult_t loomCommDeregister(const loomComm_t comm, void* handle);

/// recvbuff[i] = op over ranks of sendbuff[i], on every rank. In place when
/// sendbuff == recvbuff.
loomResult_t loomAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           loomDataType_t datatype, loomRedOp_t op, loomComm_t comm,
                           loomStream_t stream);
/// recvbuff holds nranks * sendcount elements, rank r's block at r * sendcount.
loomResult_t loomAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           loomDataType_t datatype, loomComm_t comm, loomStream_t stream);
/// sendbuff holds nranks * recvcount elements; rank r receives block r reduced.
loomResult_t loomReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               loomDataType_t datatype, loomRedOp_t op, loomComm_t comm,
                               loomStream_t stream);
/// Copies root's sendbuff into every rank's recvbuff.
loomResult_t loomBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream);
/// Reduces into root's recvbuff; recvbuff is not touched on other ranks.
loomResult_t loomReduce(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype,
                        loomRedOp_t op, int root, loomComm_t comm, loomStream_t stream);
/// Block j of sendbuff (count elements) goes to rank j, landing at block r of its recvbuff.
loomResult_t loomAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          loomDataType_t datatype, loomComm_t comm, loomStream_t stream);
/// Root's recvbuff (nranks * sendcount) receives every rank's sendbuff.
loomResult_t loomGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream);
/// Rank r's recvbuff receives block r of root's sendbuff (nranks * recvcount).
loomResult_t loomScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                         loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream);
/// Point to point. Matching send/recv pairs must agree on count and type; pairs
/// inside one group progress together, so exchanges cannot deadlock.
loomResult_t loomSend(const void* sendbuff, size_t count, loomDataType_t datatype, int peer,
                      loomComm_t comm, loomStream_t stream);
loomResult_t loomRecv(void* recvbuff, size_t count, loomDataType_t datatype, int peer,
                      loomComm_t comm, loomStream_t stream);

/// Compressed forms, for float32/float16/bfloat16 with sum or avg (all-gather:
/// any of those types). Every rank ends with the same bytes. `compression` NULL
/// means the communicator's default (LOOM_COMPRESS, else none); kind none is exact.
loomResult_t loomAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                             loomDataType_t datatype, loomRedOp_t op,
                             const loomCompression* compression, loomComm_t comm,
                             loomStream_t stream);
loomResult_t loomReduceScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 loomDataType_t datatype, loomRedOp_t op,
                                 const loomCompression* compression, loomComm_t comm,
                                 loomStream_t stream);
loomResult_t loomAllGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                             loomDataType_t datatype, const loomCompression* compression,
                             loomComm_t comm, loomStream_t stream);

/// Calls between GroupStart and GroupEnd (on this thread) are queued and run
/// together at GroupEnd. Groups nest; the outermost GroupEnd runs them.
loomResult_t loomGroupStart(void);
loomResult_t loomGroupEnd(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // LOOM_LOOM_H_
