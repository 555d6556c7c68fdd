// IEEE binary16 and bfloat16 conversions, written here rather than taken from
// the library so that the soak's reference does not share the code it checks.
#ifndef LOOM_PERF_SOAK_HALF_H_
#define LOOM_PERF_SOAK_HALF_H_

#include <cstdint>

namespace soak {

/// Round to nearest even; overflow gives infinity, NaN stays NaN.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
/// Round to nearest even; NaN stays (quiet) NaN.
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);

}  // namespace soak

#endif  // LOOM_PERF_SOAK_HALF_H_
