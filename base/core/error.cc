#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace loom {

void raiseErrno(const std::string& what) {
  const int saved = errno;
  throw Error(ErrorCode::SystemError,
              fmt::format("{}: {} (errno {})", what, std::strerror(saved), saved));
}

}  // namespace loom
