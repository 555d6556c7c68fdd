// The interface a communication library implements so the shared benchmark loop can
// drive it: loom_perf and mpi_perf differ only here.
#ifndef LOOM_PERF_COMMON_BACKEND_H_
#define LOOM_PERF_COMMON_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives.h"
#include "types.h"

namespace perf {

/// How per-rank times combine into the reported time (nccl-tests' -a).
enum class AvgMode { RankZero = 0, Mean = 1, Min = 2, Max = 3 };

/// One collective call. `input`/`output` come from Backend::layout.
struct Call {
  Coll coll;
  bool inPlace;
  char* input;
  char* output;
  size_t count;  // the per-block count the API takes
  PerfType type;
  PerfOp op;
  int root;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  /// One line for the table header: library, version, how ranks were started.
  virtual std::string describe() const = 0;
  /// Empty if supported, else why not (the run skips that combination).
  virtual std::string unsupported(Coll c, PerfType t, PerfOp op) const = 0;
  virtual bool hasInPlace(Coll c) const = 0;
  virtual Layout layout(Coll c, bool inPlace, char* send, char* recv, size_t count,
                        size_t typeBytes, int root) const = 0;
  /// Runs the call to completion; throws std::runtime_error on failure.
  virtual void run(const Call& call) = 0;
  /// All ranks enter before any leaves (an all-reduce of one element suffices).
  virtual void barrier() = 0;
  /// Combines every rank's seconds per iteration as `mode` says; result valid on rank 0.
  virtual double combineTime(double seconds, AvgMode mode) = 0;
  /// Sum of `value` over ranks, on every rank.
  virtual int64_t sumOverRanks(int64_t value) = 0;
  /// Payload bytes this rank has sent to peers so far (the library's own
  /// count, after compression), or -1 when the library cannot say.
  virtual int64_t bytesSentSoFar() { return -1; }
  /// The stream this rank's calls on device buffers go on (a CUDA stream;
  /// nullptr: the default one). Ranks that are threads of one process need
  /// one each: a library may refuse to run theirs on one shared stream.
  virtual void useStream(void* /*stream*/) {}
  /// With -R: `bytes` of host memory from the library's own allocator,
  /// registered with it for the calls (nullptr: the library has none, and
  /// the run uses ordinary buffers).
  virtual char* allocRegistered(size_t /*bytes*/) { return nullptr; }
  /// Takes back what allocRegistered gave.
  virtual void freeRegistered(char* /*buffer*/) {}
};

}  // namespace perf

#endif  // LOOM_PERF_COMMON_BACKEND_H_
