// A library opened with dlopen for one detection pass, so a machine without
// the CUDA driver or rdma-core still runs. RTLD_NODELETE keeps it mapped after
// dlclose: libibverbs and the CUDA libraries keep process-wide state allocated
// on first use, which unloading would strand (LeakSanitizer reports it) and a
// second detection would allocate again.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace loom::topo::detect {

class SharedLibrary {
 public:
  /// Tries each name in order; loaded() says whether one opened, error() why not.
  explicit SharedLibrary(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (handle_ != nullptr) {
        name_ = name;
        return;
      }
      const char* why = dlerror();
      error_ = why != nullptr ? why : name;
    }
  }
  ~SharedLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }
  const std::string& error() const { return error_; }

  /// The symbol as a function pointer of type F, or nullptr.
  template <typename F>
  F symbol(const char* name) const {
    return handle_ == nullptr ? nullptr : reinterpret_cast<F>(dlsym(handle_, name));
  }

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

}  // namespace loom::topo::detect
