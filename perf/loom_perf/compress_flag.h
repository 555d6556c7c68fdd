// --compress none|int8|topk:R. Only "none" runs today; compression arrives with the
// codecs, and until then asking for it must fail loudly rather than measure "none".
#ifndef LOOM_PERF_LOOM_PERF_COMPRESS_FLAG_H_
#define LOOM_PERF_LOOM_PERF_COMPRESS_FLAG_H_

#include <string>

namespace perf {

/// Empty if `spec` can run; otherwise the message to print before exiting with 2.
std::string checkCompressFlag(const std::string& spec);

}  // namespace perf

#endif  // LOOM_PERF_LOOM_PERF_COMPRESS_FLAG_H_
