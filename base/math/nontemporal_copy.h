// Copies whose destination is not read again soon. A plain store first reads
// the destination's cache line in (write-allocate), so a copy into a buffer
// that is not in cache moves three bytes of memory traffic per byte; stores
// that bypass the cache move two.
#pragma once

#include <cstddef>

namespace loom {

/// memcpy(dst, src, bytes) with stores that bypass the cache where the CPU
/// has them (SSE2 streaming stores on x86-64), plain memcpy elsewhere. The
/// regions must not overlap. Stores are ordered before the function returns.
void copyNonTemporal(void* dst, const void* src, size_t bytes);

}  // namespace loom
