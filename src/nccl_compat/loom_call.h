// What every data call checks and converts before it reaches Loom.
#pragma once

#include <loom/loom.h>
#include <nccl.h>

#include <cstddef>
#include <memory>

namespace loom_nccl {

/// The Loom-side arguments of one data call.
struct LoomCall {
  loomComm_t comm = nullptr;
  loomDataType_t type = loomInt8;
  loomRedOp_t op = loomSum;
  /// The caller's sendbuff, or for a PreMulSum op the scaled copy below.
  const void* send = nullptr;
  std::unique_ptr<std::byte[]> scaledInput;
};

/// How many input elements a reduction reads: `count`, or `count` per rank (reduce-scatter).
enum class Input { Count, CountPerRank };

/// For calls that move data: the communicator must be ready and the type one
/// Loom has. Host and device buffers both pass (Loom stages device buffers).
LoomCall prepareTransfer(ncclComm_t comm, const ncclDataType_t& type, const void* send,
                         const void* recv);

/// For reductions: as prepareTransfer, plus the op. A PreMulSum op becomes a
/// sum over a scaled copy of the input, so the call's in-place layout turns
/// into an out-of-place one, which Loom computes identically.
LoomCall prepareReduction(ncclComm_t comm, const ncclDataType_t& type, const ncclRedOp_t& op,
                          const void* send, const void* recv, size_t count, Input input);

/// Throws if Loom refused the call; otherwise keeps the scaled input alive for
/// as long as Loom may read it (until the group ends, if one is open).
void finish(LoomCall& call, loomResult_t result);

}  // namespace loom_nccl
