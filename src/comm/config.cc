#include "comm/config.h"

#include <algorithm>
#include <utility>

#include "core/env.h"
#include "core/error.h"
#include "tuner/network_channels.h"

namespace loom {
namespace {

constexpr Named<Algorithm> kAlgorithmNames[] = {{Algorithm::Ring, "ring"},
                                                {Algorithm::Tree, "tree"},
                                                {Algorithm::Direct, "direct"},
                                                {Algorithm::Hierarchical, "hierarchical"},
                                                {Algorithm::HostTree, "hosttree"}};

constexpr Named<TransportChoice> kTransportNames[] = {{TransportChoice::Shm, "shm"},
                                                      {TransportChoice::Tcp, "tcp"}};

constexpr Named<NetChoice> kNetNames[] = {{NetChoice::Auto, "auto"},
                                          {NetChoice::Tcp, "tcp"},
                                          {NetChoice::Ucx, "ucx"},
                                          {NetChoice::Ib, "ib"}};

// The kernel path is the default: it is the one that returns at once,
// stream-ordered, as NCCL programs expect, and it stages by itself where it
// cannot walk (no device, crowded queues, shared streams).
constexpr Named<CudaPath> kCudaPathNames[] = {
    {CudaPath::Kernel, "kernel"}, {CudaPath::Staged, "staged"}, {CudaPath::Direct, "direct"}};

/// LOOM_CUDA_SCOPE: "system" orders the kernel's FIFO words at system scope always.
constexpr Named<bool> kCudaScopeNames[] = {{false, "auto"}, {true, "system"}};

}  // namespace

std::string_view netName(NetChoice net) { return nameIn(kNetNames, net); }

CommConfig CommConfig::fromEnvironment() {
  CommConfig c;
  c.timeout = std::chrono::seconds(envInt("LOOM_TIMEOUT", 300, 1, 7LL * 24 * 3600));
  c.algorithm = envChoice("LOOM_ALGO", kAlgorithmNames);
  c.cudaPath = envChoice("LOOM_CUDA_PATH", kCudaPathNames).value_or(CudaPath::Kernel);
  c.transport = envChoice("LOOM_TRANSPORT", kTransportNames).value_or(TransportChoice::Auto);
  c.net = envChoice("LOOM_NET", kNetNames).value_or(NetChoice::Auto);
  c.check = envFlag("LOOM_CHECK", false);
  c.spinMicros = envInt("LOOM_SPIN_US", 5, 0, 1000000);
  c.yieldMicros = envInt("LOOM_YIELD_US", 1000, 0, 10000000);
  c.shm.slotBytes = envBytes("LOOM_SHM_SLOT_BYTES", 256 << 10, 4 << 10, 64 << 20);
  c.shm.slots = envInt("LOOM_SHM_SLOTS", 4, 2, kMaxShmSlots);
  c.shm.arenaBytes = envBytes("LOOM_DIRECT_BYTES", 1 << 20, 4 << 10, 1ULL << 30);
  c.tcp.slotBytes = envBytes("LOOM_TCP_SLOT_BYTES", 256 << 10, 4 << 10, 64 << 20);
  c.tcp.slots = static_cast<int>(envInt("LOOM_TCP_SLOTS", 4, 2, 64));
  c.tcp.socketsPerPeer = static_cast<int>(envInt("LOOM_TCP_SOCKETS", 2, 1, 16));
  c.directMaxBytes = envBytes("LOOM_DIRECT_MAX", SIZE_MAX, 0, SIZE_MAX);
  c.directOneShotBytes = envBytes("LOOM_DIRECT_ONESHOT", 32 << 10, 0, 1ULL << 30);
  c.nonTemporalMinBytes = envBytes("LOOM_NONTEMPORAL_MIN", 16 << 20, 0, SIZE_MAX);
  c.arenaStores =
      envChoice("LOOM_ARENA_STORES", kArenaStoreNames.words).value_or(ChoiceSetting::Measure);
  c.twoRankSum =
      envChoice("LOOM_TWO_RANK_SUM", kTwoRankSumNames.words).value_or(ChoiceSetting::Measure);
  c.singleCopy = envFlag("LOOM_SINGLE_COPY", true);
  c.singleCopyMinBytes = envBytes("LOOM_SINGLE_COPY_MIN", 256 << 10, 1, SIZE_MAX);
  c.crossMemory = envFlag("LOOM_CMA", false);
  c.treeMaxBytes = envBytes("LOOM_TREE_MAX", 64 << 10, 0, SIZE_MAX);
  if (envString("LOOM_CHUNK_SIZE")) c.chunkBytes = envBytes("LOOM_CHUNK_SIZE", 0, 256, 64 << 20);
  if (envString("LOOM_NCHANNELS"))
    c.channels = static_cast<int>(envInt("LOOM_NCHANNELS", 1, 1, 64));
  c.channelMinBytes = envBytes("LOOM_CHANNEL_MIN", tuner::kMinChannelBytes, 1, size_t{1} << 40);
  c.cudaSlotBytes = envBytes("LOOM_CUDA_SLOT_BYTES", 256 << 10, 4 << 10, 16 << 20);
  if (c.cudaSlotBytes % 16 != 0) {
    raise(ErrorCode::InvalidArgument, "LOOM_CUDA_SLOT_BYTES={} is not a multiple of 16",
          c.cudaSlotBytes);
  }
  c.cudaSystemScope = envChoice("LOOM_CUDA_SCOPE", kCudaScopeNames).value_or(false);
  c.cudaPeerWrites = envFlag("LOOM_CUDA_P2P", true);
  if (const auto text = envString("LOOM_COMPRESS")) {
    try {
      c.defaultCodec = parseCodecConfig(*text);
    } catch (const Error& e) {
      raise(ErrorCode::InvalidArgument, "LOOM_COMPRESS: {}", e.what());
    }
  }
  return c;
}

size_t CommConfig::sliceBytes() const {
  return std::min({shm.slotBytes, tcp.slotBytes, chunkBytes.value_or(SIZE_MAX)});
}

std::string CommConfig::signature() const {
  return fmt::format(
      "algo={} transport={} net={} cuda={} check={} shm={}x{} arena={} tcp={}x{} direct={}/{} "
      "singleCopy={}/{}/{} twoRankSum={} tree={} chunk={} channels={}/{} cudaSlot={} "
      "cudaScope={} cudaP2p={}",
      algorithm ? static_cast<int>(*algorithm) : -1, static_cast<int>(transport),
      static_cast<int>(net), static_cast<int>(cudaPath), check, shm.slotBytes, shm.slots,
      shm.arenaBytes, tcp.slotBytes, tcp.slots, directMaxBytes, directOneShotBytes, singleCopy,
      singleCopyMinBytes, crossMemory, static_cast<int>(twoRankSum), treeMaxBytes,
      chunkBytes.value_or(0), channels.value_or(0), channelMinBytes, cudaSlotBytes, cudaSystemScope,
      cudaPeerWrites);
}

}  // namespace loom
