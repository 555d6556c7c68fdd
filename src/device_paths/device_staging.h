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
  /// A device range one operand reads or writes.
  struct Use {
    char* device = nullptr;
    size_t bytes = 0;
    bool input = false;
    bool output = false;
    void* stream = nullptr;
  };
  /// Part of a region a call writes, copied back on that call's stream.
  struct Output {
    size_t offset = 0;
    size_t bytes = 0;
    void* stream = nullptr;
  };
  /// One contiguous device range (the union of overlapping uses: the calls
  /// of a group that share memory share its host copy) and that copy.
  struct Region {
    char* device = nullptr;
    std::vector<char> host;
    void* stream = nullptr;  ///< of its first use: the copy in
    bool copyIn = false;
    std::vector<Output> outputs;
  };

  /// Merges `uses` into regions, allocates their host copies and enqueues the copies in.
  void stageRegions(std::vector<Use>& uses);
  /// Adds `stream` to those synchronize() waits for.
  void noteStream(void* stream);
  /// Where `device`, a pointer into a staged range, lives in host memory.
  const char* hostAddress(const char* device) const;
  void synchronize();

  std::vector<Operation> hostOps_;
  std::vector<Region> regions_;
  std::vector<void*> streams_;
};

}  // namespace loom
