// Per-communicator settings, read from the environment once at init. Settings
// that must agree across ranks are compared during init (configSignature).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "collectives/executor/arena_stores.h"
#include "collectives/executor/two_rank_sum.h"
#include "collectives/plan.h"
#include "compression/codec_config.h"
#include "transports/shm/shm_domain.h"
#include "transports/tcp/tcp_transport.h"

namespace loom {

enum class TransportChoice { Auto, Shm, Tcp };
/// LOOM_NET: what links ranks on different hosts (comm/network_links.h).
enum class NetChoice { Auto, Tcp, Ucx, Ib };
/// LOOM_NET's spelling of `net`: "auto", "tcp", "ucx", "ib".
std::string_view netName(NetChoice net);
/// LOOM_CUDA_PATH: how collectives on device buffers run (device_paths/device_direct.h).
enum class CudaPath { Staged, Direct, Kernel };

struct CommConfig {
  std::chrono::milliseconds timeout{300000};          // LOOM_TIMEOUT (seconds)
  std::optional<Algorithm> algorithm;                 // LOOM_ALGO
  TransportChoice transport = TransportChoice::Auto;  // LOOM_TRANSPORT
  NetChoice net = NetChoice::Auto;                    // LOOM_NET
  CudaPath cudaPath = CudaPath::Kernel;               // LOOM_CUDA_PATH
  bool check = false;                                 // LOOM_CHECK
  long spinMicros = 5;                                // LOOM_SPIN_US
  long yieldMicros = 1000;                            // LOOM_YIELD_US
  ShmConfig shm;                     // LOOM_SHM_SLOT_BYTES, LOOM_SHM_SLOTS, LOOM_DIRECT_BYTES
  TcpConfig tcp;                     // LOOM_TCP_SLOT_BYTES, LOOM_TCP_SLOTS, LOOM_TCP_SOCKETS
  size_t directMaxBytes = SIZE_MAX;  // LOOM_DIRECT_MAX: largest message for the direct algorithm
  size_t directOneShotBytes = size_t{32} << 10;  // LOOM_DIRECT_ONESHOT
  /// LOOM_NONTEMPORAL_MIN: direct all-reduce, all-gather and broadcast
  /// results at least this large are written past the cache. A rank-local
  /// choice, so not part of the signature ranks compare.
  size_t nonTemporalMinBytes = size_t{16} << 20;
  /// LOOM_ARENA_STORES: how the direct all-reduce writes its arena rounds
  /// (collectives/executor/arena_stores.h). Rank-local too: a rank set
  /// otherwise only costs speed.
  ChoiceSetting arenaStores = ChoiceSetting::Measure;
  /// LOOM_TWO_RANK_SUM: how two ranks that read each other's buffers in place
  /// run a single-copy all-reduce out of place
  /// (collectives/executor/two_rank_sum.h). Both must choose alike: part of
  /// the signature ranks compare.
  ChoiceSetting twoRankSum = ChoiceSetting::Measure;
  /// LOOM_SINGLE_COPY=0: the direct algorithm always copies through the
  /// shared arena, never reading peers' buffers in place.
  bool singleCopy = true;
  /// LOOM_SINGLE_COPY_MIN: the smallest message (one rank's contribution)
  /// read in place from peers' buffers.
  size_t singleCopyMinBytes = size_t{256} << 10;
  /// LOOM_CMA=1: ranks in other processes are read in place too, with
  /// process_vm_readv. Off by default: on the machines measured so far the
  /// kernel's page-by-page copy (about 5 GB/s with both ranks reading) loses
  /// to the arena's two memcpy (docs/performance.md). Threads of one process
  /// are always read in place.
  bool crossMemory = false;
  size_t treeMaxBytes = size_t{64} << 10;  // LOOM_TREE_MAX: all-reduce uses trees up to this
  std::optional<size_t> chunkBytes;  // LOOM_CHUNK_SIZE: executor slice, instead of the tuner's
  /// LOOM_NCHANNELS: link sets to network peers (host path) and blocks per
  /// rank (device walk); unset: chosen (comm_init.cc, device_walk_placement.cc).
  std::optional<int> channels;
  size_t channelMinBytes = 0;  // LOOM_CHANNEL_MIN: smallest all-reduce piece per channel
  /// LOOM_CUDA_SLOT_BYTES: payload of one bulk message of the plan-walking
  /// kernel (a multiple of 16).
  size_t cudaSlotBytes = size_t{256} << 10;
  /// LOOM_CUDA_SCOPE=system: the walks order their FIFO words at system scope
  /// even where device scope suffices (auto).
  bool cudaSystemScope = false;
  /// LOOM_CUDA_P2P=0: no rank writes into a peer's device memory, every pair
  /// of the plan-walking kernel goes through pinned host memory and the
  /// proxy (for containers where CUDA IPC misbehaves, and to test that path).
  bool cudaPeerWrites = true;
  /// LOOM_COMPRESS: codec for plain all-reduce / reduce-scatter calls on
  /// fp32/fp16/bf16 with sum or avg (others stay exact).
  CodecConfig defaultCodec;

  /// Throws InvalidArgument naming the variable for a bad value.
  static CommConfig fromEnvironment();
  /// Slice size used by plans: the same on every rank whatever links it has
  /// (the smaller slot, or LOOM_CHUNK_SIZE when smaller still).
  size_t sliceBytes() const;
  /// Text of the settings ranks must share; init compares it across ranks.
  std::string signature() const;
};

}  // namespace loom
