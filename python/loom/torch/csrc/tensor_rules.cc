#include "tensor_rules.h"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

namespace loom::torch_backend {

[[noreturn]] void refuse(const std::string& message) {
  C10_THROW_ERROR(ValueError, "loom backend: " + message);
}

loomDataType_t loomType(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return loomFloat32;
    case at::kDouble:
      return loomFloat64;
    case at::kHalf:
      return loomFloat16;
    case at::kBFloat16:
      return loomBfloat16;
    case at::kChar:
      return loomInt8;
    case at::kByte:
    case at::kBool:
      return loomUint8;
    case at::kInt:
      return loomInt32;
    case at::kLong:
      return loomInt64;
    default:
      refuse(std::string("tensors of type ") + c10::toString(t.scalar_type()) +
             " are not supported (float32/64, float16, bfloat16, int8, uint8, int32, int64, "
             "bool are)");
  }
}

loomRedOp_t loomOp(const c10d::ReduceOp& op, const at::Tensor& t) {
  const bool logical = t.scalar_type() == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PREMUL_SUM:  // the factor is applied before (premultiply)
      return logical ? loomMax : loomSum;
    case c10d::ReduceOp::AVG:
      if (logical) refuse("AVG of bool tensors has no meaning");
      return loomAvg;
    case c10d::ReduceOp::PRODUCT:
      return logical ? loomMin : loomProd;
    case c10d::ReduceOp::MIN:
      return loomMin;
    case c10d::ReduceOp::MAX:
      return loomMax;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      refuse(
          "bitwise reductions (BAND, BOR, BXOR) are not supported; Loom reduces with SUM, "
          "PRODUCT, MIN, MAX, AVG and PREMUL_SUM");
    default:
      refuse("unknown reduce op " + std::to_string(static_cast<int>(op.op_)));
  }
}

void premultiply(const c10d::ReduceOp& op, at::Tensor& t) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return;
  const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  if (factor == nullptr) refuse("PREMUL_SUM without its factor");
  if (factor->tensor_factor.defined()) {
    t.mul_(factor->tensor_factor);
  } else {
    t.mul_(factor->double_factor);
  }
}

void requireCpu(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu()) {
    refuse(std::string(what) + " is on " + t.device().str() +
           "; this backend takes CPU tensors (GPU programs use Loom through the NCCL shim)");
  }
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* what) {
  if (tensors.size() != 1) {
    refuse(std::string(what) + " takes one tensor per process, got " +
           std::to_string(tensors.size()));
  }
  requireCpu(tensors[0], what);
  loomType(tensors[0]);
  return tensors[0];
}

void sameLayout(const at::Tensor& a, const at::Tensor& b, const char* what) {
  if (a.scalar_type() != b.scalar_type()) {
    refuse(std::string(what) + ": tensors of " + c10::toString(a.scalar_type()) + " and " +
           c10::toString(b.scalar_type()) + " in one call");
  }
}

}  // namespace loom::torch_backend
