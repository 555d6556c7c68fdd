// Collectives on device buffers before the kernel executor exists: every
// device operand is copied to host memory on the caller's stream, the host
// executor runs the call, and the results go back on the same stream. The
// call returns once the stream has delivered them, so it is ordered after the
// caller's earlier work on that stream and its results are ready when it
// returns (NCCL returns at once and finishes later; docs/cuda.md).
#pragma once

#include <span>
#include <vector>

#include "comm/operation.h"

namespace loom {

/// Waits for the streams of the ops whose buffers are host-accessible but known
/// to CUDA (pinned, managed): the host executor reads them directly, so the
/// caller's earlier work on those streams must have finished.
void waitForStreamOrderedHostBuffers(std::span<const Operation> ops);

class DeviceStaging {
 public:
  /// Copies the inputs of every op with onDevice to host memory and waits for
  /// them. Ops on the host pass through unchanged.
  DeviceStaging(const Comm& comm, std::span<const Operation> ops);

  /// `ops` with device buffers replaced by their host copies, laid out alike
  /// (an in-place call stays in place).
  std::span<const Operation> hostOps() const { return hostOps_; }

  /// Copies every device output back and waits for the streams.
  void finish();

 private:
  /// One contiguous device range and its host copy.
  struct Region {
    char* device = nullptr;
    std::vector<char> host;
    void* stream = nullptr;
    size_t outputOffset = 0;  ///< the output's part of the range
    size_t outputBytes = 0;
  };

  char* stage(char* device, size_t bytes, bool copyIn, size_t outputOffset, size_t outputBytes,
              void* stream);
  void synchronize();

  std::vector<Operation> hostOps_;
  std::vector<Region> regions_;
  std::vector<void*> streams_;
};

}  // namespace loom
