// Errors at the NCCL boundary. Code inside the shim throws Failure; every
// exported function runs its body through guarded(), which records the message
// for ncclGetLastError and returns the code, so nothing throws across the C ABI.
#pragma once

#include <fmt/format.h>
#include <loom/loom.h>
#include <nccl.h>

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace loom_nccl {

class Failure : public std::runtime_error {
 public:
  Failure(ncclResult_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ncclResult_t code() const { return code_; }

 private:
  ncclResult_t code_;
};

template <typename... Args>
[[noreturn]] void fail(ncclResult_t code, fmt::format_string<Args...> format, Args&&... args) {
  throw Failure(code, fmt::format(format, std::forward<Args>(args)...));
}

/// Loom's result as NCCL's. The codes share values; loomAborted and
/// loomRevoked, which NCCL lacks, become ncclInvalidUsage (the communicator
/// was aborted or revoked).
ncclResult_t fromLoom(loomResult_t result);

/// Throws a Failure carrying loomGetLastError's message unless `result` is loomSuccess.
void check(loomResult_t result);

/// The calling thread's last error message; "" before the first failure.
const char* lastError();
/// Records `message` as this thread's last error and logs it at INFO.
void recordError(const std::string& message);

template <typename T>
void requireOut(T* pointer, const char* name) {
  if (pointer == nullptr) fail(ncclInvalidArgument, "{} is NULL", name);
}

/// Runs `body`, turning what it throws into a result code and a last-error message
/// prefixed with `function`.
template <typename Body>
ncclResult_t guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return ncclSuccess;
  } catch (const Failure& f) {
    recordError(fmt::format("{}: {}", function, f.what()));
    return f.code();
  } catch (const std::bad_alloc&) {
    recordError(fmt::format("{}: out of memory", function));
    return ncclSystemError;
  } catch (const std::exception& e) {
    recordError(fmt::format("{}: internal error: {}", function, e.what()));
    return ncclInternalError;
  }
}

}  // namespace loom_nccl
