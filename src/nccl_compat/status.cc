#include "status.h"

#include "log.h"

namespace loom_nccl {
namespace {

// Per thread, as ncclGetLastError requires: the one piece of error state the
// ABI forces on us (the message of a failed call outlives the call).
std::string& lastErrorSlot() {
  thread_local std::string message;
  return message;
}

}  // namespace

ncclResult_t fromLoom(loomResult_t result) {
  // NCCL has no codes for these; a revoked communicator is unusable, as an
  // aborted one is.
  if (result == loomAborted || result == loomRevoked) return ncclInvalidUsage;
  if (result < loomSuccess || result >= loomNumResults) return ncclInternalError;
  static_assert(static_cast<int>(loomInProgress) == static_cast<int>(ncclInProgress));
  static_assert(static_cast<int>(loomRemoteError) == static_cast<int>(ncclRemoteError));
  return static_cast<ncclResult_t>(result);
}

void check(loomResult_t result) {
  if (result == loomSuccess) return;
  std::string message = loomGetLastError(nullptr);
  if (result == loomAborted) message += " (the communicator was aborted)";
  if (result == loomRevoked) message += " (the communicator was revoked)";
  throw Failure(fromLoom(result), message);
}

const char* lastError() { return lastErrorSlot().c_str(); }

void recordError(const std::string& message) {
  lastErrorSlot() = message;
  logInfo("{}", message);
}

}  // namespace loom_nccl
