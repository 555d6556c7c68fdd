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

/// copyNonTemporal without ordering the stores: for a run of copies out of a
/// small block that end with one fenceNonTemporal(). A fence after every
/// block waits for the write-combining buffers to drain, so reads and
/// streaming stores stop overlapping (measured: a 2-rank 16 MiB sum through a
/// 4 KiB block, 12.4 against 6.6 GB/s when every block was fenced).
void streamNonTemporal(void* dst, const void* src, size_t bytes);
/// Orders every streaming store made before it (a no-op where there are none).
void fenceNonTemporal();

}  // namespace loom
