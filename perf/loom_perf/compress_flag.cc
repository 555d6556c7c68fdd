#include "compress_flag.h"

#include <cstdlib>

namespace perf {
namespace {

// topk:R keeps the fraction R of elements, so R must lie in (0, 1]; options
// after a comma (",algo=ring") are the library's to check.
bool validTopK(const std::string& spec) {
  const std::string prefix = "topk:";
  if (spec.rfind(prefix, 0) != 0 || spec.size() == prefix.size()) return false;
  const char* text = spec.c_str() + prefix.size();
  char* end = nullptr;
  const double ratio = std::strtod(text, &end);
  return (*end == '\0' || *end == ',') && ratio > 0.0 && ratio <= 1.0;
}

}  // namespace

std::string checkCompressFlag(const std::string& spec) {
  if (spec == "none" || spec == "int8" || spec.rfind("int8:", 0) == 0 || validTopK(spec)) {
    return {};
  }
  return "--compress '" + spec +
         "' is not one of none, int8, int8:block=B, topk:R (0 < R <= 1), with optional "
         ",algo=twoshot|ring|allgather";
}

}  // namespace perf
