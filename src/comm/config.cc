#include "comm/config.h"

#include <algorithm>
#include <utility>

#include "core/env.h"
#include "core/error.h"
#include "tuner/network_channels.h"

namespace loom {
namespace {

std::optional<Algorithm> parseAlgorithm() {
  const auto text = envString("LOOM_ALGO");
  if (!text) return std::nullopt;
  if (*text == "ring") return Algorithm::Ring;
  if (*text == "tree") return Algorithm::Tree;
  if (*text == "direct") return Algorithm::Direct;
  if (*text == "hierarchical") return Algorithm::Hierarchical;
  if (*text == "hosttree") return Algorithm::HostTree;
  raise(ErrorCode::InvalidArgument,
        "LOOM_ALGO='{}' is not one of ring, tree, direct, hierarchical, hosttree", *text);
}

TransportChoice parseTransport() {
  const auto text = envString("LOOM_TRANSPORT");
  if (!text) return TransportChoice::Auto;
  if (*text == "shm") return TransportChoice::Shm;
  if (*text == "tcp") return TransportChoice::Tcp;
  raise(ErrorCode::InvalidArgument, "LOOM_TRANSPORT='{}' is not one of shm, tcp", *text);
}

constexpr std::pair<NetChoice, const char*> kNetNames[] = {{NetChoice::Auto, "auto"},
                                                           {NetChoice::Tcp, "tcp"},
                                                           {NetChoice::Ucx, "ucx"},
                                                           {NetChoice::Ib, "ib"}};

NetChoice parseNet() {
  const auto text = envString("LOOM_NET");
  if (!text) return NetChoice::Auto;
  for (const auto& [net, name] : kNetNames) {
    if (*text == name) return net;
  }
  raise(ErrorCode::InvalidArgument, "LOOM_NET='{}' is not one of auto, tcp, ucx, ib", *text);
}

CudaPath parseCudaPath() {
  const auto text = envString("LOOM_CUDA_PATH");
  // The kernel path is the default: it is the one that returns at once,
  // stream-ordered, as NCCL programs expect, and it stages by itself where it
  // cannot walk (no device, crowded queues, shared streams).
  if (!text || *text == "kernel") return CudaPath::Kernel;
  if (*text == "staged") return CudaPath::Staged;
  if (*text == "direct") return CudaPath::Direct;
  raise(ErrorCode::InvalidArgument, "LOOM_CUDA_PATH='{}' is not one of staged, direct, kernel",
        *text);
}

bool parseCudaScope() {
  const auto text = envString("LOOM_CUDA_SCOPE");
  if (!text || *text == "auto") return false;
  if (*text == "system") return true;
  raise(ErrorCode::InvalidArgument, "LOOM_CUDA_SCOPE='{}' is not one of auto, system", *text);
}

}  // namespace

const char* netName(NetChoice net) {
  for (const auto& [choice, name] : kNetNames) {
    if (choice == net) return name;
  }
  return "?";
}

CommConfig CommConfig::fromEnvironment() {
  CommConfig c;
  c.timeout = std::chrono::seconds(envInt("LOOM_TIMEOUT", 300, 1, 7LL * 24 * 3600));
  c.algorithm = parseAlgorithm();
  c.cudaPath = parseCudaPath();
  c.transport = parseTransport();
  c.net = parseNet();
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
  c.cudaSystemScope = parseCudaScope();
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
      "singleCopy={}/{}/{} tree={} chunk={} channels={}/{} cudaSlot={} cudaScope={} cudaP2p={}",
      algorithm ? static_cast<int>(*algorithm) : -1, static_cast<int>(transport),
      static_cast<int>(net), static_cast<int>(cudaPath), check, shm.slotBytes, shm.slots,
      shm.arenaBytes, tcp.slotBytes, tcp.slots, directMaxBytes, directOneShotBytes, singleCopy,
      singleCopyMinBytes, crossMemory, treeMaxBytes, chunkBytes.value_or(0), channels.value_or(0),
      channelMinBytes, cudaSlotBytes, cudaSystemScope, cudaPeerWrites);
}

}  // namespace loom
