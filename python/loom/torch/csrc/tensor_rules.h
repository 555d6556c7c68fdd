// How torch's tensors and reduce ops map onto Loom's C API, and what the
// backend refuses (with a ValueError that says why). Shared by every
// collective of the backend (loom_backend.cc).
#pragma once

#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

#include "loom/loom.h"

namespace loom::torch_backend {

[[noreturn]] void refuse(const std::string& message);

/// Loom's type for a tensor's; bool travels as uint8 (see loomOp).
loomDataType_t loomType(const at::Tensor& t);
/// A bool reduction is logical: sum and max are "or", product and min "and".
loomRedOp_t loomOp(const c10d::ReduceOp& op, const at::Tensor& t);
/// PREMUL_SUM: scales `t` by the op's factor, in place, before the sum.
void premultiply(const c10d::ReduceOp& op, at::Tensor& t);
void requireCpu(const at::Tensor& t, const char* what);
/// The one tensor of a single-tensor call, on the CPU and of a type Loom has.
const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* what);
void sameLayout(const at::Tensor& a, const at::Tensor& b, const char* what);

/// A contiguous tensor with `t`'s values: `t` itself when it already is;
/// `writeBack` then copies results into a non-contiguous `t`.
struct Dense {
  at::Tensor original;
  at::Tensor data;
  explicit Dense(const at::Tensor& t) : original(t), data(t.contiguous()) {}
  void writeBack() {
    if (!data.is_same(original)) original.copy_(data);
  }
};

}  // namespace loom::torch_backend
