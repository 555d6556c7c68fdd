// Element types as the soak sees them: size, name, and conversion between the
// small integers the reference works in and the bytes Loom works on.
#ifndef LOOM_PERF_SOAK_TYPES_H_
#define LOOM_PERF_SOAK_TYPES_H_

#include <loom/loom.h>

#include <cstddef>
#include <cstdint>

namespace soak {

const char* typeName(loomDataType_t t);
const char* opName(loomRedOp_t op);
bool isFloat(loomDataType_t t);
bool isSigned(loomDataType_t t);

/// Writes integer v as one element of type t. Callers keep |v| small enough to
/// be exact in every type (fp16 and bf16 included).
void encodeValue(loomDataType_t t, int64_t v, void* dst);
/// One element as a double, for messages.
double decodeValue(loomDataType_t t, const void* src);

}  // namespace soak

#endif  // LOOM_PERF_SOAK_TYPES_H_
