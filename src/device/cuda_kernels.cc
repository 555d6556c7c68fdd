#include "device/cuda_kernels.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <vector>

namespace loom::device {
namespace {

constexpr const char* kPluginName = "libloom_cuda_kernels.so";

/// The folder of the shared object (or executable) this code is linked into.
std::string ownFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudaKernels), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  const std::string file = info.dli_fname;
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

}  // namespace

CudaKernels loadCudaKernels(const std::string* paths, size_t count) {
  CudaKernels k;
  std::string tried;
  for (size_t i = 0; i < count; ++i) {
    void* handle = dlopen(paths[i].c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += fmt::format("{}{}", tried.empty() ? "" : "; ", why != nullptr ? why : paths[i]);
      continue;
    }
    auto entry = reinterpret_cast<LoomCudaKernelsEntry>(dlsym(handle, LOOM_CUDA_KERNELS_ENTRY));
    const LoomCudaKernels* table = entry != nullptr ? entry() : nullptr;
    if (table == nullptr || table->abiVersion != LOOM_CUDA_KERNELS_ABI_VERSION ||
        table->reduce == nullptr || table->avgFinalize == nullptr || table->walk == nullptr ||
        table->prepareWalk == nullptr) {
      tried += fmt::format("{}{}: no {} of ABI version {}", tried.empty() ? "" : "; ", paths[i],
                           LOOM_CUDA_KERNELS_ENTRY, LOOM_CUDA_KERNELS_ABI_VERSION);
      continue;  // left open: closing a library that initialised CUDA is not safe
    }
    k.table = table;
    k.path = paths[i];
    return k;
  }
  k.reason = "no Loom CUDA kernel plugin: " + (tried.empty() ? std::string("no paths") : tried);
  return k;
}

const CudaKernels& cudaKernels() {
  static const CudaKernels kernels = [] {
    const std::vector<std::string> paths = {ownFolder() + kPluginName, kPluginName};
    return loadCudaKernels(paths.data(), paths.size());
  }();
  return kernels;
}

}  // namespace loom::device
