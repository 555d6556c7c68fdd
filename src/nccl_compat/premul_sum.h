// PreMulSum reduction ops (ncclRedOpCreatePreMulSum): each rank's input times
// that rank's scalar, summed. Loom has no such op; the shim scales a copy of the
// input (scale.h) and runs a plain sum on the copy.
#pragma once

#include <loom/loom.h>
#include <nccl.h>

#include <array>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

namespace loom_nccl {

struct PreMulSum {
  loomDataType_t type = loomFloat32;
  /// The scalar's bytes, when read at creation (ncclScalarHostImmediate).
  std::array<std::byte, 8> value{};
  /// Otherwise where to read the scalar at each call (ncclScalarDevice; under the
  /// host-buffer extension a host pointer that must stay valid while the op lives).
  const void* source = nullptr;

  const void* scalar() const { return source != nullptr ? source : value.data(); }
};

/// One communicator's PreMulSum ops, numbered from ncclNumOps up. Ops are
/// created and used from any thread, hence the mutex.
class PreMulSumTable {
 public:
  ncclRedOp_t add(const PreMulSum& op);
  /// Throws ncclInvalidArgument unless `op` was made by add() and not removed yet.
  void remove(const ncclRedOp_t& op);
  /// Throws ncclInvalidArgument unless `op` was made by add() and not removed yet.
  PreMulSum find(const ncclRedOp_t& op) const;

 private:
  size_t slotOf(const ncclRedOp_t& op) const;  // requires mutex_ held

  mutable std::mutex mutex_;
  std::vector<std::optional<PreMulSum>> slots_;  // slot i is op ncclNumOps + i
};

}  // namespace loom_nccl
