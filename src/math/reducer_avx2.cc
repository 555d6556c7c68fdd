// Reduction kernels compiled for AVX2, chosen at run time by reducerFor().
// The loops are memory-bound once data leaves L2, but reductions of chunks that
// sit in cache (the common case in a pipelined ring) run about twice as fast
// with 256-bit vectors. FMA is left out on purpose: no kernel may contract a
// multiply and an add, or host results would stop matching the device's.
#include "math/reducer_isa.h"

#if defined(__x86_64__) && defined(__GNUC__)

// Everything reduce_kernels.h includes comes first, outside the target pragma,
// so those inline functions stay baseline code (see reduce_kernels.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/types.h"
#include "math/half.h"
#include "math/reducer.h"

#pragma GCC push_options
#pragma GCC target("avx2")
#include "math/reduce_kernels.h"

namespace loom::reducer_isa {

ReduceFn avx2Reducer(DataType type, ReduceOp op) { return kernels::reducerTable(type, op); }

FinalizeFn avx2AvgFinalizer(DataType type) { return kernels::avgFinalizerTable(type); }

}  // namespace loom::reducer_isa
#pragma GCC pop_options

namespace loom::reducer_isa {

bool haveAvx2() {
  __builtin_cpu_init();  // may run before the CPU-model constructor does
  return __builtin_cpu_supports("avx2");
}

}  // namespace loom::reducer_isa

#else

namespace loom::reducer_isa {

bool haveAvx2() { return false; }
ReduceFn avx2Reducer(DataType type, ReduceOp op) { return genericReducer(type, op); }
FinalizeFn avx2AvgFinalizer(DataType type) { return genericAvgFinalizer(type); }

}  // namespace loom::reducer_isa

#endif
