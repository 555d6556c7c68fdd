// Loom's CUDA kernels, reached through the plugin libloom_cuda_kernels.so
// (base/device/cuda_kernels_abi.h), opened once per process on first use.
#pragma once

#include <string>

#include "device/cuda_kernels_abi.h"

namespace loom::device {

struct CudaKernels {
  const LoomCudaKernels* table = nullptr;  ///< non-null when available
  std::string reason;                      ///< why not, when table is null
  std::string path;                        ///< what was opened
};

/// The plugin beside libloom (the same folder as the library holding this
/// code), else the one the dynamic loader finds. Like deviceRuntime(), loaded
/// once and never closed.
const CudaKernels& cudaKernels();

/// Loads the plugin from the first of `paths` that opens, exports the entry
/// point and speaks this ABI version; tests pass paths that do not.
CudaKernels loadCudaKernels(const std::string* paths, size_t count);

}  // namespace loom::device
