// Reductions through a block in L1: each block is reduced there with the
// ordinary kernels and copied out to its homes, streamed where the result
// goes straight to memory, so no kernel needs a streaming twin. Blocks are
// 4 KiB and the stores are fenced once at the end: 16 KiB blocks, or a fence
// per block, stop the reads from overlapping the streaming stores (a 2-rank
// 16 MiB sum on this project's 2-core VM: 12.4 GB/s as here, 8.2 with 16 KiB
// blocks, 6.6 with a fence per block).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "math/nontemporal_copy.h"

namespace loom {

inline constexpr size_t kStreamedBlockBytes = size_t{4} << 10;

/// Where reduceInBlocks puts each reduced block: with streaming stores, or
/// with plain ones (a result the caller reads next, in cache).
struct ReducedHome {
  char* data = nullptr;
  bool streaming = true;
};

/// home[0..count) from reduceBlock(to, first, n), which writes elements
/// [first, first + n) of the result at `to` (at most kStreamedBlockBytes):
/// the block in L1 where `home` is streamed, else `home` itself. A `second`
/// home (an arena all-reduce's own shard goes to the peers and to the caller)
/// is copied from there while the lines sit in L1, instead of read back
/// later. Streaming stores are ordered before it returns.
template <typename ReduceBlock>
void reduceInBlocks(size_t count, size_t elementSize, ReduceBlock reduceBlock, ReducedHome home,
                    ReducedHome second = {}) {
  alignas(64) char block[kStreamedBlockBytes];
  const size_t perBlock = kStreamedBlockBytes / elementSize;
  for (size_t first = 0; first < count; first += perBlock) {
    const size_t n = std::min(perBlock, count - first);
    const size_t at = first * elementSize;
    const size_t bytes = n * elementSize;
    // A cached home takes the sum directly: through the block and a copy it
    // measured 0.6x at 1-2 MiB (2 ranks, cached arena stores).
    char* const sum = home.streaming ? block : home.data + at;
    reduceBlock(sum, first, n);
    if (home.streaming) streamNonTemporal(home.data + at, block, bytes);
    if (second.data == nullptr) continue;
    if (second.streaming) {
      streamNonTemporal(second.data + at, sum, bytes);
    } else {
      std::memcpy(second.data + at, sum, bytes);
    }
  }
  if (home.streaming || (second.data != nullptr && second.streaming)) fenceNonTemporal();
}

/// out[0..count) through reduceInBlocks, streamed.
template <typename ReduceBlock>
void reduceStreamed(char* out, size_t count, size_t elementSize, ReduceBlock reduceBlock) {
  reduceInBlocks(count, elementSize, reduceBlock, ReducedHome{out, true});
}

}  // namespace loom
