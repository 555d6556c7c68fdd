// --compress none|int8|int8:block=B|topk:R. The spec becomes LOOM_COMPRESS for this
// process before the communicator is created, so plain all-reduce and
// reduce-scatter calls on float data run compressed (Loom checks the spec itself).
#ifndef LOOM_PERF_LOOM_PERF_COMPRESS_FLAG_H_
#define LOOM_PERF_LOOM_PERF_COMPRESS_FLAG_H_

#include <string>

namespace perf {

/// Empty if `spec` can run; otherwise the message to print before exiting with 2.
std::string checkCompressFlag(const std::string& spec);

}  // namespace perf

#endif  // LOOM_PERF_LOOM_PERF_COMPRESS_FLAG_H_
