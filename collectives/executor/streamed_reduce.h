// Reductions whose result goes straight to memory: each block is reduced into
// L1 with the ordinary kernels and streamed out from there, so no kernel needs
// a streaming twin. Blocks are 4 KiB and the stores are fenced once at the
// end: 16 KiB blocks, or a fence per block, stop the reads from overlapping
// the streaming stores (a 2-rank 16 MiB sum on this project's 2-core VM:
// 12.4 GB/s as here, 8.2 with 16 KiB blocks, 6.6 with a fence per block).
#pragma once

#include <algorithm>
#include <cstddef>

#include "math/nontemporal_copy.h"

namespace loom {

inline constexpr size_t kStreamedBlockBytes = size_t{4} << 10;

/// out[0..count) from reduceBlock(block, first, n), which writes elements
/// [first, first + n) of the result into `block` (at most
/// kStreamedBlockBytes). The stores are ordered before it returns.
template <typename ReduceBlock>
void reduceStreamed(char* out, size_t count, size_t elementSize, ReduceBlock reduceBlock) {
  alignas(64) char block[kStreamedBlockBytes];
  const size_t perBlock = kStreamedBlockBytes / elementSize;
  for (size_t first = 0; first < count; first += perBlock) {
    const size_t n = std::min(perBlock, count - first);
    reduceBlock(block, first, n);
    streamNonTemporal(out + first * elementSize, block, n * elementSize);
  }
  fenceNonTemporal();
}

}  // namespace loom
