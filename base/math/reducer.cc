// reducerFor / finalizerFor: validate the enums, then pick the fastest build of
// the kernels this CPU can run.
#include "math/reducer.h"

#include "core/error.h"
#include "math/reducer_isa.h"

namespace loom {
namespace {

void checkArgs(DataType type, ReduceOp op) {
  const int t = static_cast<int>(type);
  const int o = static_cast<int>(op);
  if (t < 0 || t >= kNumDataTypes) raise(ErrorCode::InvalidArgument, "invalid data type {}", t);
  if (o < 0 || o >= kNumReduceOps) raise(ErrorCode::InvalidArgument, "invalid reduce op {}", o);
}

}  // namespace

ReduceFn reducerFor(DataType type, ReduceOp op) {
  checkArgs(type, op);
  return reducer_isa::haveAvx2() ? reducer_isa::avx2Reducer(type, op)
                                 : reducer_isa::genericReducer(type, op);
}

FinalizeFn finalizerFor(DataType type, ReduceOp op) {
  checkArgs(type, op);
  if (op != ReduceOp::Avg) return nullptr;
  return reducer_isa::haveAvx2() ? reducer_isa::avx2AvgFinalizer(type)
                                 : reducer_isa::genericAvgFinalizer(type);
}

namespace reducer_isa {

void checkAvgRanks(int nranks) {
  if (nranks < 1) raise(ErrorCode::InvalidArgument, "avg over {} ranks: need at least 1", nranks);
}

}  // namespace reducer_isa
}  // namespace loom
