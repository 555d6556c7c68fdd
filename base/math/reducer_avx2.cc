// Reduction kernels compiled for AVX2 + F16C, chosen at run time by reducerFor().
// The loops are memory-bound once data leaves L2, but reductions of chunks that
// sit in cache (the common case in a pipelined ring) run up to twice as fast
// with 256-bit vectors, and fp16 several times faster with F16C's conversion
// instructions, which round to nearest even and quiet NaNs exactly as
// half_inl.h does. FMA is left out on purpose: no kernel may contract a multiply
// and an add, or host results would stop matching the device's.
#include "math/reducer_isa.h"

#if defined(__x86_64__) && defined(__GNUC__)

// Everything reduce_kernels.h includes comes first, outside the target pragma,
// so those inline functions stay baseline code (see reduce_kernels.h).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/types.h"
#include "math/half.h"
#include "math/reducer.h"

#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#include "math/reduce_kernels.h"

namespace loom::reducer_isa {
namespace {

// fp16 <-> float eight at a time with vcvtph2ps / vcvtps2ph; the tail (and so
// every element of a short vector) goes through the portable code.
struct F16cHalfConv {
  static void widen(float* __restrict out, const uint16_t* __restrict in, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    kernels::HalfConv::widen(out + i, in + i, n - i);
  }
  static void narrow(uint16_t* __restrict out, const float* __restrict in, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
    kernels::HalfConv::narrow(out + i, in + i, n - i);
  }
};

struct Avx2Converters {
  using Half = F16cHalfConv;
  using Bf16 = kernels::Bf16Conv;
};

}  // namespace

ReduceFn avx2Reducer(DataType type, ReduceOp op) {
  return kernels::reducerTable<Avx2Converters>(type, op);
}

FinalizeFn avx2AvgFinalizer(DataType type) {
  return kernels::avgFinalizerTable<Avx2Converters>(type);
}

}  // namespace loom::reducer_isa
#pragma GCC pop_options

namespace loom::reducer_isa {

bool haveAvx2() {
  __builtin_cpu_init();  // may run before the CPU-model constructor does
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

}  // namespace loom::reducer_isa

#else

namespace loom::reducer_isa {

bool haveAvx2() { return false; }
ReduceFn avx2Reducer(DataType type, ReduceOp op) { return genericReducer(type, op); }
FinalizeFn avx2AvgFinalizer(DataType type) { return genericAvgFinalizer(type); }

}  // namespace loom::reducer_isa

#endif
