// Per-instruction-set builds of the reduction kernels (math/reduce_kernels.h).
// reducerFor() picks one at run time; tests call each directly so every build
// is checked on a machine that can run it.
#pragma once

#include "core/types.h"
#include "math/reducer.h"

namespace loom::reducer_isa {

/// Kernels compiled for the baseline ISA. Arguments must be in range; Avg maps to Sum.
ReduceFn genericReducer(DataType type, ReduceOp op);
/// Avg finaliser compiled for the baseline ISA.
FinalizeFn genericAvgFinalizer(DataType type);

/// True when this build has AVX2 kernels and the CPU running it supports them
/// (AVX2 and F16C).
bool haveAvx2();
/// Kernels compiled for AVX2 + F16C (call only when haveAvx2(); elsewhere these
/// return the generic kernels).
ReduceFn avx2Reducer(DataType type, ReduceOp op);
FinalizeFn avx2AvgFinalizer(DataType type);

/// Throws InvalidArgument unless nranks >= 1 (an Avg over no ranks has no value).
void checkAvgRanks(int nranks);

}  // namespace loom::reducer_isa
