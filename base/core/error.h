// Internal error type. Internal code throws loom::Error; the C API boundary
// catches it, records the message for loomGetLastError and returns the code.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace loom {

enum class ErrorCode {
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  Aborted = 8,
  Revoked = 9,
  CudaError = 1,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

/// Throws Error(code, fmt::format(format, args...)).
template <typename... Args>
[[noreturn]] void raise(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

/// Throws SystemError with strerror(errno) appended.
[[noreturn]] void raiseErrno(const std::string& what);

}  // namespace loom
