#include "premul_sum.h"
#include "status.h"
#include "types.h"

namespace loom_nccl {

ncclRedOp_t PreMulSumTable::add(const PreMulSum& op) {
  const std::lock_guard lock(mutex_);
  size_t slot = 0;
  while (slot < slots_.size() && slots_[slot].has_value()) ++slot;
  if (slot >= static_cast<size_t>(ncclMaxRedOp - ncclNumOps)) {
    fail(ncclInvalidUsage, "too many PreMulSum ops alive on this communicator");
  }
  if (slot == slots_.size()) slots_.emplace_back();
  slots_[slot] = op;
  return static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(slot));
}

void PreMulSumTable::remove(const ncclRedOp_t& op) {
  const std::lock_guard lock(mutex_);
  slots_[slotOf(op)].reset();
}

PreMulSum PreMulSumTable::find(const ncclRedOp_t& op) const {
  const std::lock_guard lock(mutex_);
  return *slots_[slotOf(op)];
}

size_t PreMulSumTable::slotOf(const ncclRedOp_t& op) const {
  const int value = enumValue(op);
  if (value < ncclNumOps) {
    fail(ncclInvalidArgument, "op {} is a built-in op, not one made by ncclRedOpCreatePreMulSum",
         value);
  }
  const auto slot = static_cast<size_t>(value - ncclNumOps);
  if (slot >= slots_.size() || !slots_[slot].has_value()) {
    fail(ncclInvalidArgument,
         "op {} was not made by ncclRedOpCreatePreMulSum on this communicator, or was destroyed",
         value);
  }
  return slot;
}

}  // namespace loom_nccl
