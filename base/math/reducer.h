// Element-wise reduction kernels on host memory: (dtype, op) -> function.
// fp16 and bf16 are computed through float and rounded to nearest-even, the
// same rule the CUDA kernels use, so host and device agree bit for bit.
#pragma once

#include <cstddef>

#include "core/types.h"

namespace loom {

/// dst[i] = a[i] (op) b[i] for i < n. dst may alias a or b (exactly, not
/// partially). Avg reduces as Sum; see FinalizeFn.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n);

/// data[i] = data[i] / nranks for Avg (integers truncate toward zero); applied
/// once to a fully reduced value. nullptr for ops that need no finalisation.
using FinalizeFn = void (*)(void* data, size_t n, int nranks);

ReduceFn reducerFor(DataType type, ReduceOp op);
FinalizeFn finalizerFor(DataType type, ReduceOp op);

}  // namespace loom
