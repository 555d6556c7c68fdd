// DriverWatch answers like the loader itself (cudaDriverLoaded), and notices
// a driver that appears after its first answer.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "device/cuda_runtime.h"
#include "device/driver_watch.h"

namespace loom::device {
namespace {

TEST(DriverWatch, AgreesWithTheLoader) {
  DriverWatch watch;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(watch.loaded(), cudaDriverLoaded());
}

// In a fresh process: each step's answer as one bit of the exit code, so the
// parent sees which step went wrong. 0 means every answer was right.
int watchAcrossLoadAndUnload() {
  if (cudaDriverLoaded()) return 64;  // this process already had a driver
  DriverWatch watch;
  int wrong = 0;
  if (watch.loaded()) wrong |= 1;  // nothing loaded yet
  if (watch.loaded()) wrong |= 2;  // the cached answer
  void* driver = dlopen(LOOM_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return 128;
  if (!watch.loaded()) wrong |= 4;  // loaded since the last answer
  if (!watch.loaded()) wrong |= 8;  // and still, from the cache
  dlclose(driver);
  // Unloading changes the loader's counts too: the watch asks again.
  if (watch.loaded() != cudaDriverLoaded()) wrong |= 16;
  return wrong;
}

TEST(DriverWatchDeathTest, SeesTheDriverArriveAndLeave) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(watchAcrossLoadAndUnload()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace loom::device
