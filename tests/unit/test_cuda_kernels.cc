// Opening the CUDA kernel plugin (base/device/cuda_kernels.h) on any machine:
// missing files and libraries without the entry point are refused with the
// reason, and in a CUDA build the real plugin opens (no GPU needed: its CUDA
// runtime starts only when a kernel is launched).
#include <gtest/gtest.h>

#include <string>

#include "device/cuda_kernels.h"

namespace loom::device {
namespace {

TEST(CudaKernels, MissingPluginsAreRefusedWithEveryReason) {
  const std::string paths[] = {"/nonexistent/libloom_cuda_kernels.so", "libloom-no-such.so"};
  const CudaKernels k = loadCudaKernels(paths, 2);
  EXPECT_EQ(k.table, nullptr);
  EXPECT_EQ(k.reason.rfind("no Loom CUDA kernel plugin: ", 0), 0u) << k.reason;
  EXPECT_NE(k.reason.find("/nonexistent/libloom_cuda_kernels.so"), std::string::npos) << k.reason;
  EXPECT_NE(k.reason.find("libloom-no-such.so"), std::string::npos) << k.reason;
}

TEST(CudaKernels, LibraryWithoutTheEntryPointIsRefused) {
  const std::string paths[] = {"libc.so.6"};
  const CudaKernels k = loadCudaKernels(paths, 1);
  EXPECT_EQ(k.table, nullptr);
  EXPECT_NE(k.reason.find("no loomCudaKernels of ABI version"), std::string::npos) << k.reason;
}

TEST(CudaKernels, TheBuiltPluginOpens) {
#ifdef LOOM_CUDA_KERNELS_PLUGIN
  const std::string paths[] = {LOOM_CUDA_KERNELS_PLUGIN};
  const CudaKernels k = loadCudaKernels(paths, 1);
  ASSERT_NE(k.table, nullptr) << k.reason;
  EXPECT_EQ(k.table->abiVersion, LOOM_CUDA_KERNELS_ABI_VERSION);
  EXPECT_NE(k.table->reduce, nullptr);
  EXPECT_NE(k.table->avgFinalize, nullptr);
  EXPECT_EQ(k.path, paths[0]);
#else
  GTEST_SKIP() << "built without CUDA: there is no kernel plugin to open";
#endif
}

}  // namespace
}  // namespace loom::device
