// Library-wide queries: version, error strings, last error, debug reset.
#include "profiling_alias.h"
#include "status.h"
#include "types.h"

using loom_nccl::guarded;

extern "C" {

/// The NCCL version whose header the shim was built against: the ABI it provides.
ncclResult_t ncclGetVersion(int* version) {
  return guarded("ncclGetVersion", [&] {
    loom_nccl::requireOut(version, "version");
    *version = NCCL_VERSION_CODE;
  });
}

const char* ncclGetErrorString(ncclResult_t result) {
  // Loom's codes 0 .. ncclNumResults-1 mean what NCCL's mean.
  const int value = loom_nccl::enumValue(result);
  if (value < 0 || value >= ncclNumResults) return "unknown ncclResult_t";
  return loomGetErrorString(static_cast<loomResult_t>(value));
}

/// The calling thread's last error, whatever the comm (NCCL's is not per comm either).
const char* ncclGetLastError(ncclComm_t comm) { return loom_nccl::lastError(); }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/// Loom and the shim read their log level once; there is nothing to reload.
void ncclResetDebugInit() {}
#pragma GCC diagnostic pop

}  // extern "C"

LOOM_NCCL_PROFILING_ALIAS(ncclGetVersion)
LOOM_NCCL_PROFILING_ALIAS(ncclGetErrorString)
LOOM_NCCL_PROFILING_ALIAS(ncclGetLastError)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
LOOM_NCCL_PROFILING_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
