// Reduction kernels for the baseline instruction set (SSE2 on x86-64).
#include "math/reduce_kernels.h"

namespace loom::reducer_isa {

ReduceFn genericReducer(DataType type, ReduceOp op) {
  return kernels::reducerTable<kernels::DefaultConverters>(type, op);
}

FinalizeFn genericAvgFinalizer(DataType type) {
  return kernels::avgFinalizerTable<kernels::DefaultConverters>(type);
}

}  // namespace loom::reducer_isa
