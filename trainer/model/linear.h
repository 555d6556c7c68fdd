// y = x W (+ b) and its gradients, for row-major x [rows, in] and W [in, out].
// Thin wrappers over the backend's gemm that fix the transposes once.
#pragma once

#include "math/kernels.h"

namespace loom::train {

struct LinearShape {
  int rows;  ///< tokens
  int in;
  int out;
};

/// y = x W, then + bias when bias is not null.
inline void linearForward(const LinearShape& s, const float* x, const float* w, const float* bias,
                          float* y) {
  math::gemm(false, false, s.rows, s.out, s.in, 1.0f, x, s.in, w, s.out, 0.0f, y, s.out);
  if (bias != nullptr) math::addRowVector(y, bias, s.rows, s.out);
}

/// dW += x^T dy; dbias += column sums of dy (when not null); dx = dy W^T (when not null).
inline void linearBackward(const LinearShape& s, const float* x, const float* w, const float* dy,
                           float* dw, float* dbias, float* dx) {
  math::gemm(true, false, s.in, s.out, s.rows, 1.0f, x, s.in, dy, s.out, 1.0f, dw, s.out);
  if (dbias != nullptr) math::accumulateColumnSums(dy, s.rows, s.out, dbias);
  if (dx != nullptr) {
    math::gemm(false, true, s.rows, s.in, s.out, 1.0f, dy, s.out, w, s.out, 0.0f, dx, s.in);
  }
}

}  // namespace loom::train
