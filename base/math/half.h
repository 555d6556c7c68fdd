// IEEE binary16 and bfloat16 <-> float, round to nearest even, NaN preserved.
// Usable from host and CUDA device code.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define LOOM_HD __host__ __device__ inline
#else
#define LOOM_HD inline
#endif

namespace loom {

LOOM_HD float halfToFloat(uint16_t h);
LOOM_HD uint16_t floatToHalf(float f);
LOOM_HD float bf16ToFloat(uint16_t b);
LOOM_HD uint16_t floatToBf16(float f);

}  // namespace loom

#include "math/half_inl.h"
