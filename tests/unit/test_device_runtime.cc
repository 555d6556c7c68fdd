// CUDA runtime access through dlopen, pointer kinds and the host/device buffer
// rule. Runs on every machine: the runtime paths that need a GPU are in
// tests/gpu; here the rule is checked on kinds directly and the runtime on
// whatever this machine has (usually no driver).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "device/buffer_rules.h"
#include "device/cuda_runtime.h"
#include "device/memory_kind.h"

namespace loom::device {
namespace {

TEST(DeviceRuntime, MissingLibraryIsUnavailableWithReason) {
  const char* names[] = {"libloom-no-such-cudart.so.1", "libloom-no-such-cudart.so.2"};
  const DeviceRuntime rt = loadDeviceRuntime(names, 2);
  EXPECT_FALSE(rt.available);
  EXPECT_EQ(rt.reason.rfind("no CUDA runtime/driver: ", 0), 0u) << rt.reason;
  // Both names were tried and dlopen's own words are kept.
  EXPECT_NE(rt.reason.find("libloom-no-such-cudart.so.1"), std::string::npos) << rt.reason;
  EXPECT_NE(rt.reason.find("libloom-no-such-cudart.so.2"), std::string::npos) << rt.reason;
  EXPECT_EQ(rt.deviceCount, 0);
}

TEST(DeviceRuntime, NoNamesIsUnavailable) {
  const DeviceRuntime rt = loadDeviceRuntime(nullptr, 0);
  EXPECT_FALSE(rt.available);
  EXPECT_NE(rt.reason.find("no library names"), std::string::npos) << rt.reason;
}

TEST(DeviceRuntime, LibraryWithoutCudaSymbolsIsUnavailable) {
  const char* names[] = {"libc.so.6"};
  const DeviceRuntime rt = loadDeviceRuntime(names, 1);
  EXPECT_FALSE(rt.available);
  EXPECT_NE(rt.reason.find("lacks cudaGetDeviceCount"), std::string::npos) << rt.reason;
}

TEST(DeviceRuntime, ProcessHandleIsStableAndExplainsItself) {
  const DeviceRuntime& rt = deviceRuntime();
  EXPECT_EQ(&rt, &deviceRuntime());
  if (rt.available) {
    EXPECT_GT(rt.deviceCount, 0);
    EXPECT_TRUE(rt.reason.empty());
  } else {
    // On a machine without a driver (CI) or without a GPU the reason says which.
    EXPECT_EQ(rt.reason.rfind("no CUDA runtime/driver: ", 0), 0u) << rt.reason;
    std::printf("[ info     ] %s\n", rt.reason.c_str());
  }
}

TEST(DeviceRuntime, CheckNamesTheCallAndTheError) {
  DeviceRuntime rt;  // no library: the message falls back to the number
  rt.check(0, "cudaMemcpyAsync");
  try {
    rt.check(700, "cudaMemcpyAsync");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::CudaError);
    EXPECT_NE(std::string(e.what()).find("cudaMemcpyAsync"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("700"), std::string::npos);
  }
}

TEST(MemoryKind, EverythingIsHostWithoutARuntime) {
  const DeviceRuntime none;
  std::vector<float> heap(4);
  int stack = 0;
  EXPECT_EQ(classifyPointer(none, heap.data()), MemoryKind::Host);
  EXPECT_EQ(classifyPointer(none, &stack), MemoryKind::Host);
  EXPECT_EQ(classifyPointer(none, nullptr), MemoryKind::Host);
  // Whatever this machine has, ordinary host memory is never device memory.
  EXPECT_TRUE(hostAccessible(classifyPointer(heap.data())));
}

TEST(MemoryKind, Names) {
  EXPECT_EQ(memoryKindName(MemoryKind::Host), "host");
  EXPECT_EQ(memoryKindName(MemoryKind::PinnedHost), "pinned host");
  EXPECT_EQ(memoryKindName(MemoryKind::Device), "device");
  EXPECT_EQ(memoryKindName(MemoryKind::Managed), "managed");
  EXPECT_FALSE(hostAccessible(MemoryKind::Device));
  EXPECT_TRUE(hostAccessible(MemoryKind::Managed));
  EXPECT_TRUE(hostAccessible(MemoryKind::PinnedHost));
}

ErrorCode ruleFor(MemoryKind send, MemoryKind recv, bool executor, std::string* message) {
  try {
    checkBufferKinds("allreduce", send, recv, executor);
  } catch (const Error& e) {
    *message = e.what();
    return e.code();
  }
  return ErrorCode::InternalError;  // stands for "accepted"
}

TEST(BufferRules, HostAndHostAccessibleKindsPass) {
  for (MemoryKind a : {MemoryKind::Host, MemoryKind::PinnedHost, MemoryKind::Managed}) {
    for (MemoryKind b : {MemoryKind::Host, MemoryKind::PinnedHost, MemoryKind::Managed}) {
      for (bool executor : {false, true}) {
        EXPECT_NO_THROW(checkBufferKinds("allreduce", a, b, executor));
      }
    }
  }
}

TEST(BufferRules, MixingHostAndDeviceIsInvalidArgument) {
  for (bool executor : {false, true}) {
    std::string message;
    EXPECT_EQ(ruleFor(MemoryKind::Device, MemoryKind::Host, executor, &message),
              ErrorCode::InvalidArgument);
    EXPECT_NE(message.find("allreduce: sendbuff is device memory but recvbuff is host memory"),
              std::string::npos)
        << message;
    EXPECT_EQ(ruleFor(MemoryKind::Managed, MemoryKind::Device, executor, &message),
              ErrorCode::InvalidArgument);
  }
}

TEST(BufferRules, DeviceBuffersWithoutExecutorAreInvalidUsage) {
  std::string message;
  EXPECT_EQ(ruleFor(MemoryKind::Device, MemoryKind::Device, false, &message),
            ErrorCode::InvalidUsage);
  EXPECT_NE(message.find("device buffers need a CUDA runtime with a device"), std::string::npos)
      << message;
  EXPECT_NO_THROW(checkBufferKinds("allreduce", MemoryKind::Device, MemoryKind::Device, true));
}

// In a fresh process: 0 when classifying host buffers loaded no CUDA runtime,
// 1 when it did, 2 when the driver was loaded before anything happened.
int classifyHostBuffersInFreshProcess() {
  if (cudaDriverLoaded()) return 2;
  std::vector<float> a(8), b(8);
  DriverWatch driver;
  checkBufferLocations("allreduce", a.data(), b.data(), driver);
  const char* runtimes[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  for (const char* name : runtimes) {
    if (dlopen(name, RTLD_LAZY | RTLD_NOLOAD) != nullptr) return 1;
  }
  return 0;
}

// A process that never loaded the CUDA driver asks CUDA nothing about its
// buffers: it must not load a CUDA runtime (nor create a context holding GPU
// memory) just to run host collectives.
TEST(BufferRulesDeathTest, HostOnlyProcessesNeverLoadCuda) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(classifyHostBuffersInFreshProcess()), ::testing::ExitedWithCode(0), "");
}

TEST(BufferRules, HostPointersPassOnThisMachine) {
  std::vector<float> a(8), b(8);
  DriverWatch driver;
  EXPECT_FALSE(checkBufferLocations("allreduce", a.data(), b.data(), driver).streamOrdered);
  EXPECT_NO_THROW(checkBufferLocations("send", a.data(), nullptr, driver));
  EXPECT_NO_THROW(checkBufferLocations("recv", nullptr, b.data(), driver));
  EXPECT_NO_THROW(checkBufferLocations("allreduce", nullptr, nullptr, driver));
}

}  // namespace
}  // namespace loom::device
