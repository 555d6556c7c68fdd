#include "device/cuda_kernels.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
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

namespace {

/// Whether the plugin filled every entry of its table: a plugin of this ABI
/// version with a gap would crash on first use instead of being refused.
bool everyEntrySet(const LoomCudaKernels& t) {
  const void* const entries[] = {reinterpret_cast<const void*>(t.reduce),
                                 reinterpret_cast<const void*>(t.avgFinalize),
                                 reinterpret_cast<const void*>(t.walk),
                                 reinterpret_cast<const void*>(t.prepareWalk),
                                 reinterpret_cast<const void*>(t.int8Encode),
                                 reinterpret_cast<const void*>(t.int8Decode),
                                 reinterpret_cast<const void*>(t.int8DecodeAccumulate),
                                 reinterpret_cast<const void*>(t.walkResidentBlocks),
                                 reinterpret_cast<const void*>(t.int8DecodeSum),
                                 reinterpret_cast<const void*>(t.int8EncodeFeedback),
                                 reinterpret_cast<const void*>(t.topkEncode),
                                 reinterpret_cast<const void*>(t.topkEncodeWorkBytes),
                                 reinterpret_cast<const void*>(t.topkDecodeAccumulate),
                                 reinterpret_cast<const void*>(t.topkDecode),
                                 reinterpret_cast<const void*>(t.compensate),
                                 reinterpret_cast<const void*>(t.topkForgetKept),
                                 reinterpret_cast<const void*>(t.narrowFloats)};
  // Every function pointer of the table is listed above.
  static_assert(sizeof(entries) == sizeof(LoomCudaKernels) - sizeof(void*));
  return std::all_of(std::begin(entries), std::end(entries),
                     [](const void* entry) { return entry != nullptr; });
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
        !everyEntrySet(*table)) {
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
