// The --compress flag: none, int8, int8:block=N or topk:R (R the kept fraction).
#pragma once

#include <loom/loom.h>

#include <string>

namespace loom::train {

/// Parses `text` into *out; on failure returns false and says why in *error.
bool parseCompression(const std::string& text, loomCompression* out, std::string* error);
std::string compressionName(const loomCompression& c);

}  // namespace loom::train
